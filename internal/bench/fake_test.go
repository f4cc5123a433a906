package bench

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// replyFunc decides how a fake server answers the n-th request (from 1)
// of a connection: the response to publish (nil: none) and the PUBACK's
// reason code.
type replyFunc func(n int, req *packets.Publish) (*packets.Publish, byte)

// startFake starts a minimal MQTT 5 server that answers requests as reply
// says. It speaks through paho's codec, so it also checks the generator's
// own encoding against an independent one.
func startFake(t *testing.T, reply replyFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveFake(c, reply)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func serveFake(c net.Conn, reply replyFunc) {
	n := 0
	for {
		cp, err := packets.ReadPacket(c)
		if err != nil {
			return
		}
		switch p := cp.Content.(type) {
		case *packets.Connect:
			_, err = (&packets.Connack{Properties: &packets.Properties{}}).WriteTo(c)
		case *packets.Subscribe:
			reasons := make([]byte, len(p.Subscriptions))
			for i := range reasons {
				reasons[i] = 1
			}
			_, err = (&packets.Suback{PacketID: p.PacketID, Reasons: reasons, Properties: &packets.Properties{}}).WriteTo(c)
		case *packets.Publish:
			n++
			resp, reason := reply(n, p)
			_, err = (&packets.Puback{PacketID: p.PacketID, ReasonCode: reason, Properties: &packets.Properties{}}).WriteTo(c)
			if err == nil && resp != nil {
				// Copy: the reply may be shared between requests.
				cp, props := *resp, *resp.Properties
				cp.Properties = &props
				resp = &cp
				resp.Topic = p.Properties.ResponseTopic
				resp.QoS, resp.PacketID = 1, uint16(n%60000+1)
				if resp.Properties.CorrelationData == nil {
					resp.Properties.CorrelationData = p.Properties.CorrelationData
				}
				_, err = resp.WriteTo(c)
			}
		case *packets.Disconnect:
			return
		}
		if err != nil {
			return
		}
	}
}

// answer builds a response with the given payload and user properties.
func answer(payload string, user ...string) *packets.Publish {
	p := &packets.Publish{Payload: []byte(payload), Properties: &packets.Properties{}}
	for i := 0; i+1 < len(user); i += 2 {
		p.Properties.User = append(p.Properties.User, packets.User{Key: user[i], Value: user[i+1]})
	}
	return p
}

const goodTS = "001700000000123:00001:fake"

func runFake(t *testing.T, op string, reply replyFunc, cfg Config) *Report {
	t.Helper()
	cfg.Server = startFake(t, reply)
	w, err := ParseWorkload(op)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workload = w
	no := false
	cfg.Preload = &no
	cfg.Clients = 2
	cfg.Duration, cfg.Warmup = 500*time.Millisecond, 100*time.Millisecond
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Run(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func TestFakeServerPipelined(t *testing.T) {
	rep := runFake(t, "set", func(int, *packets.Publish) (*packets.Publish, byte) {
		return answer("+OK\r\n", "__stat", "200", "__ts", goodTS), 0
	}, Config{Inflight: 16})
	if rep.Errors != 0 || rep.Timeouts != 0 || rep.Requests == 0 {
		t.Fatalf("requests %d, errors %v %v, timeouts %d", rep.Requests, rep.ErrorsByKind, rep.ErrorSamples, rep.Timeouts)
	}
}

func TestWrongResponsesAreErrors(t *testing.T) {
	tests := []struct {
		name  string
		op    string
		reply *packets.Publish
		kind  string
	}{
		{"GET answered +OK", "get", answer("+OK\r\n", "__stat", "200", "__ts", goodTS), "payload"},
		{"GET of the wrong size", "get", answer("$1\r\nx\r\n", "__stat", "200", "__ts", goodTS), "value_size"},
		{"GET miss with __ts", "get", answer("$-1\r\n", "__stat", "200", "__ts", goodTS), "timestamp"},
		{"SET without __ts", "set", answer("+OK\r\n", "__stat", "200"), "timestamp"},
		{"SET without __stat", "set", answer("+OK\r\n", "__ts", goodTS), "status"},
		{"SET refused", "set", answer("-ERR syntax error\r\n", "__stat", "200"), "error_reply"},
		{"DEL answered :-1", "del", answer(":-1\r\n", "__stat", "200"), "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := runFake(t, tt.op, func(int, *packets.Publish) (*packets.Publish, byte) { return tt.reply, 0 }, Config{})
			if rep.Requests != 0 || rep.Errors == 0 || rep.ErrorsByKind[tt.kind] != rep.Errors {
				t.Fatalf("requests %d, errors %d by kind %v, want all %q; %v", rep.Requests, rep.Errors, rep.ErrorsByKind, tt.kind, rep.ErrorSamples)
			}
			if rep.ErrorSamples[tt.kind] == "" {
				t.Fatal("no sample of the error")
			}
			if rep.Timeouts != 0 {
				t.Fatalf("an invalid response is not a timeout: %d", rep.Timeouts)
			}
		})
	}
}

func TestLostResponsesTimeOut(t *testing.T) {
	rep := runFake(t, "set", func(n int, _ *packets.Publish) (*packets.Publish, byte) {
		if n%5 == 0 {
			return nil, 0
		}
		return answer("+OK\r\n", "__stat", "200", "__ts", goodTS), 0
	}, Config{Timeout: 50 * time.Millisecond, Inflight: 2})
	if rep.Timeouts == 0 || rep.Requests == 0 || rep.Errors != 0 {
		t.Fatalf("timeouts %d, requests %d, errors %v", rep.Timeouts, rep.Requests, rep.ErrorsByKind)
	}
}

func TestForeignCorrelationData(t *testing.T) {
	rep := runFake(t, "set", func(n int, _ *packets.Publish) (*packets.Publish, byte) {
		p := answer("+OK\r\n", "__stat", "200", "__ts", goodTS)
		if n%3 == 0 {
			p.Properties.CorrelationData = []byte("elsewhere")
		}
		return p, 0
	}, Config{Timeout: 50 * time.Millisecond})
	if rep.ErrorsByKind["correlation"] == 0 || rep.Timeouts == 0 || rep.Requests == 0 {
		t.Fatalf("errors %v, timeouts %d, requests %d", rep.ErrorsByKind, rep.Timeouts, rep.Requests)
	}
}

func TestRefusedPublishes(t *testing.T) {
	rep := runFake(t, "set", func(int, *packets.Publish) (*packets.Publish, byte) {
		return nil, 0x83 // the server refuses the request in its PUBACK
	}, Config{})
	if rep.ErrorsByKind["puback"] == 0 || rep.Errors != rep.ErrorsByKind["puback"] || rep.Timeouts != 0 || rep.Requests != 0 {
		t.Fatalf("errors %v, timeouts %d, requests %d", rep.ErrorsByKind, rep.Timeouts, rep.Requests)
	}
}

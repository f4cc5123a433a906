package bench

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
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
	return startSlowFake(t, 0, reply)
}

// startSlowFake starts a fake that reads nothing of a connection for
// delay after accepting it; a negative delay never reads (and so never
// answers the CONNECT).
func startSlowFake(t *testing.T, delay time.Duration, reply replyFunc) string {
	t.Helper()
	stop := make(chan struct{})
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
				if delay != 0 {
					var wait <-chan time.Time // nil: forever
					if delay > 0 {
						wait = time.After(delay)
					}
					select {
					case <-wait:
					case <-stop:
						return
					}
				}
				serveFake(c, reply)
			}()
		}
	}()
	t.Cleanup(func() {
		close(stop)
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

// runFake runs cfg.Requests requests (default 100) of op against a fake
// server that answers as reply says. A run of a fixed number of requests
// does not depend on how many a busy machine fits in a window.
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
	if cfg.Requests == 0 {
		cfg.Requests = 100
	}
	if cfg.Timeout == 0 {
		// Long enough that no answered request times out on a busy
		// machine: only the tests of timeouts set a short one.
		cfg.Timeout = 20 * time.Second
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
	}, Config{Inflight: 16, Requests: 500})
	if rep.Errors != 0 || rep.Timeouts != 0 || rep.Requests != 500 {
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
			rep := runFake(t, tt.op, func(int, *packets.Publish) (*packets.Publish, byte) { return tt.reply, 0 }, Config{Requests: 20})
			if rep.Requests != 0 || rep.Errors != 20 || rep.ErrorsByKind[tt.kind] != rep.Errors {
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

// everyNth returns a counter, shared by the fake's connections, that
// reports true for every n-th request of the run.
func everyNth(n int64) func() bool {
	var count atomic.Int64
	return func() bool { return count.Add(1)%n == 0 }
}

// TestLostResponsesTimeOut: the fake never answers every fifth request
// (its PUBACK comes, its response never does); each of those, and only a
// late answered one besides, counts as timed out.
func TestLostResponsesTimeOut(t *testing.T) {
	lost := everyNth(5)
	rep := runFake(t, "set", func(int, *packets.Publish) (*packets.Publish, byte) {
		if lost() {
			return nil, 0
		}
		return answer("+OK\r\n", "__stat", "200", "__ts", goodTS), 0
	}, Config{Requests: 100, Timeout: 300 * time.Millisecond, Inflight: 2})
	if rep.Timeouts < 20 || rep.Requests+rep.Timeouts != 100 || rep.Errors != 0 {
		t.Fatalf("timeouts %d, requests %d, errors %v; want 20 or more timeouts (the unanswered), adding up to 100 with the requests",
			rep.Timeouts, rep.Requests, rep.ErrorsByKind)
	}
}

// TestForeignCorrelationData: every third response carries correlation
// data of no request: it is an error, and its request, never answered,
// times out.
func TestForeignCorrelationData(t *testing.T) {
	foreign := everyNth(3)
	rep := runFake(t, "set", func(int, *packets.Publish) (*packets.Publish, byte) {
		p := answer("+OK\r\n", "__stat", "200", "__ts", goodTS)
		if foreign() {
			p.Properties.CorrelationData = []byte("elsewhere")
		}
		return p, 0
	}, Config{Requests: 60, Timeout: 300 * time.Millisecond})
	if rep.ErrorsByKind["correlation"] != 20 || rep.Errors != 20 || rep.Timeouts < 20 || rep.Requests+rep.Timeouts != 60 {
		t.Fatalf("errors %v, timeouts %d, requests %d; want 20 correlation errors, 20 or more timeouts, adding up to 60 with the requests",
			rep.ErrorsByKind, rep.Timeouts, rep.Requests)
	}
}

func TestRefusedPublishes(t *testing.T) {
	rep := runFake(t, "set", func(int, *packets.Publish) (*packets.Publish, byte) {
		return nil, 0x83 // the server refuses the request in its PUBACK
	}, Config{Requests: 20})
	if rep.ErrorsByKind["puback"] != 20 || rep.Errors != rep.ErrorsByKind["puback"] || rep.Timeouts != 0 || rep.Requests != 0 {
		t.Fatalf("errors %v, timeouts %d, requests %d", rep.ErrorsByKind, rep.Timeouts, rep.Requests)
	}
}

// TestConnectIsNotBoundByTheRequestTimeout: a CONNACK slower than the
// requests' timeout, but within the connect timeout, connects.
func TestConnectIsNotBoundByTheRequestTimeout(t *testing.T) {
	addr := startSlowFake(t, 300*time.Millisecond, func(int, *packets.Publish) (*packets.Publish, byte) {
		return answer("+OK\r\n", "__stat", "200", "__ts", goodTS), 0
	})
	no := false
	cfg := Config{Server: addr, Clients: 2, Requests: 10, Preload: &no, Timeout: 20 * time.Millisecond, ConnectTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("connecting took longer than --timeout and failed: %v", err)
	}
	// Requests may time out on a busy machine: 20 ms is short. Each one
	// was sent, though, and answered or timed out.
	if rep.Requests+rep.Timeouts != 10 || rep.Errors != 0 {
		t.Fatalf("requests %d, timeouts %d, errors %v", rep.Requests, rep.Timeouts, rep.ErrorsByKind)
	}
}

// TestConnectTimesOut: a server that never answers the CONNECT ends the
// run with an error after the connect timeout.
func TestConnectTimesOut(t *testing.T) {
	addr := startSlowFake(t, -1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Run(ctx, Config{Server: addr, Clients: 1, ConnectTimeout: 200 * time.Millisecond}, nil)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Run against a server that never answers the CONNECT: %v, want a timeout", err)
	}
}

// TestWatchCountsMissingNotifications runs watch against a server that
// answers every request and notifies nobody: every SET answered +OK is a
// missing notification and an error.
func TestWatchCountsMissingNotifications(t *testing.T) {
	rep := runFake(t, "watch", func(_ int, req *packets.Publish) (*packets.Publish, byte) {
		if bytes.Contains(req.Payload, []byte("KEYNOTIFY")) {
			return answer("+OK\r\n", "__stat", "200"), 0
		}
		return answer("+OK\r\n", "__stat", "200", "__ts", goodTS), 0
	}, Config{Watchers: 3, Requests: 40, Timeout: 2 * time.Second})
	n := rep.Notify
	if n == nil || n.Notifications != 40 || n.Deliveries != 0 || n.Missing != 40 {
		t.Fatalf("notify report %+v", n)
	}
	if rep.Errors != 40 || rep.ErrorsByKind["notification"] != 40 || rep.ErrorSamples["notification"] == "" {
		t.Fatalf("errors %d %v %v", rep.Errors, rep.ErrorsByKind, rep.ErrorSamples)
	}
}

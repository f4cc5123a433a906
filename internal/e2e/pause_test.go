//go:build !windows

package e2e_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
)

// pingingClient is a raw MQTT 5 connection that sends a PINGREQ every
// period, whether or not the server answers, and records what it reads.
type pingingClient struct {
	t    *testing.T
	id   string
	conn net.Conn
	mu   sync.Mutex
	got  []packets.Packet // guarded by mu
	err  error            // guarded by mu: what ended the reads
	stop chan struct{}
	done sync.WaitGroup
}

func encodePacket(t *testing.T, pk packets.Packet) []byte {
	t.Helper()
	pk.ProtocolVersion = 5
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(&buf)
	default:
		t.Fatalf("no encoder for packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readPacket(r *bufio.Reader) (packets.Packet, error) {
	var pk packets.Packet
	b, err := r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(r)
	if err != nil {
		return pk, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return pk, err
	}
	pk.ProtocolVersion = 5
	switch pk.FixedHeader.Type {
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	}
	return pk, err
}

// dialPinging connects id with keep alive keepalive and starts pinging
// every period; it is closed when the test ends.
func dialPinging(t *testing.T, addr, id string, keepalive uint16, period time.Duration) *pingingClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	c := &pingingClient{t: t, id: id, conn: conn, stop: make(chan struct{})}
	c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: id, Clean: true, Keepalive: keepalive}})
	r := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(dsstest.Timeout))
	if pk, err := readPacket(r); err != nil || pk.FixedHeader.Type != packets.Connack {
		t.Fatalf("%s: no CONNACK: %v", id, err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	c.done.Add(2)
	go func() {
		defer c.done.Done()
		for {
			pk, err := readPacket(r)
			c.mu.Lock()
			if err != nil {
				c.err = err
				c.mu.Unlock()
				return
			}
			c.got = append(c.got, pk)
			c.mu.Unlock()
			if pk.FixedHeader.Type == packets.Publish && pk.FixedHeader.Qos == 1 {
				c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID})
			}
		}
	}()
	go func() {
		defer c.done.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
				c.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
			}
		}
	}()
	t.Cleanup(func() {
		close(c.stop)
		_ = conn.Close()
		c.done.Wait()
	})
	return c
}

func (c *pingingClient) write(pk packets.Packet) {
	_, _ = c.conn.Write(encodePacket(c.t, pk))
}

// count returns how many packets of type typ the client read, and what
// ended its reads (nil while the connection is open).
func (c *pingingClient) count(typ byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, pk := range c.got {
		if pk.FixedHeader.Type == typ {
			n++
		}
	}
	return n, c.err
}

// TestKeepAliveIsJudgedOnWhatTheClientSent stops the server (SIGSTOP)
// for longer than one and a half keep alives while its clients go on
// sending PINGREQs and a QoS 1 message: those wait in the sockets, and
// once the server runs again it reads them and keeps every connection;
// the message reaches its subscriber. A read whose deadline had passed
// failed without looking at the socket, so every such client was
// disconnected for keep alive (one lost its QoS 1 message). Both ways of
// reading connections are tried: read loops (epoll), and a goroutine
// each. The long variant (DSS_LONG=1) stops the server 12 s with a keep
// alive of 5 s.
func TestKeepAliveIsJudgedOnWhatTheClientSent(t *testing.T) {
	keepalive, pause := uint16(2), 5*time.Second
	if dsstest.Long() {
		keepalive, pause = 5, 12*time.Second
	}
	for _, loops := range []string{"0", "-1"} {
		t.Run("read-loops="+loops, func(t *testing.T) {
			p := startDSS(t, anyPort, "--in-memory", "--read-loops", loops, "--log-level", "debug")
			defer func() {
				if t.Failed() {
					t.Log(p.out.String())
				}
			}()
			period := time.Duration(keepalive) * time.Second / 2
			sub := dialPinging(t, p.addr, "sub", keepalive, period)
			sub.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1,
				Filters: packets.Subscriptions{{Filter: "t", Qos: 1}}})
			pub := dialPinging(t, p.addr, "pub", keepalive, period)
			idle := dialPinging(t, p.addr, "idle", keepalive, period)
			dsstest.Eventually(t, "the subscription and pings are answered", func() bool {
				n, _ := sub.count(packets.Suback)
				m, _ := idle.count(packets.Pingresp)
				return n == 1 && m > 0
			})

			if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(pause / 2)
			pub.write(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: 1,
				TopicName: "t", Payload: []byte("sent while the server was stopped")})
			time.Sleep(pause / 2)
			before, _ := idle.count(packets.Pingresp)
			if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}

			dsstest.Eventually(t, "the message sent during the stop is delivered and acknowledged", func() bool {
				n, _ := sub.count(packets.Publish)
				m, _ := pub.count(packets.Puback)
				return n == 1 && m == 1
			})
			// Two keep alives on, every client is still connected and
			// answered.
			deadline := time.Now().Add(2 * time.Duration(keepalive) * time.Second)
			for time.Now().Before(deadline) {
				for _, c := range []*pingingClient{sub, pub, idle} {
					if _, err := c.count(packets.Pingresp); err != nil {
						t.Fatalf("%s lost its connection after the server's stop of %v (keep alive %ds): %v", c.id, pause, keepalive, err)
					}
					if n, _ := c.count(packets.Disconnect); n > 0 {
						t.Fatalf("%s was sent DISCONNECT after the server's stop of %v (keep alive %ds)", c.id, pause, keepalive)
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			if after, _ := idle.count(packets.Pingresp); after <= before {
				t.Fatalf("no PINGRESP after the stop (%d before, %d after)", before, after)
			}
		})
	}
}

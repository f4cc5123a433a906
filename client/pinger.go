package client

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/log"
)

// pinger notices a server that stopped answering. MQTT's keep alive only
// asks the client to send something within the interval, and paho waits
// a whole interval more for the answer to its PINGREQ: a hung server (a
// stopped process, a machine gone without closing its connections) went
// unnoticed for up to twice the keep alive, a minute by default. The
// pinger sends a PINGREQ after PingTimeout without a packet from the
// server, and drops the connection when nothing comes within another
// PingTimeout: the client then reconnects, to another server if there is
// one, and its watches resync.
type pinger struct {
	timeout time.Duration

	mu       sync.Mutex
	received time.Time // guarded by mu; the last packet from the server
	sent     time.Time // guarded by mu; the last packet to the server
}

var _ paho.Pinger = (*pinger)(nil)

func newPinger(timeout time.Duration) *pinger { return &pinger{timeout: timeout} }

// Run pings until ctx ends or the server is taken for dead. keepAlive is
// the MQTT keep alive the connection agreed on: a PINGREQ also goes out
// before it passes without a packet from the client.
func (p *pinger) Run(ctx context.Context, conn net.Conn, keepAlive uint16) error {
	now := time.Now()
	p.mu.Lock()
	p.received, p.sent = now, now
	p.mu.Unlock()
	sendWithin := time.Duration(keepAlive) * time.Second * 3 / 4
	tick := time.NewTicker(max(p.timeout/4, 10*time.Millisecond))
	defer tick.Stop()
	var pingSent time.Time // zero: no PINGREQ waits for an answer
	errs := make(chan error, 1)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case now = <-tick.C:
		}
		p.mu.Lock()
		received, sent := p.received, p.sent
		p.mu.Unlock()
		if !pingSent.IsZero() && received.After(pingSent) {
			pingSent = time.Time{}
		}
		switch {
		case !pingSent.IsZero():
			if now.Sub(pingSent) >= p.timeout {
				return fmt.Errorf("no answer from the server within %v of a PINGREQ", p.timeout)
			}
		case now.Sub(received) >= p.timeout, sendWithin > 0 && now.Sub(sent) >= sendWithin:
			pingSent = now
			go func() {
				// A write to a server that does not read may block until
				// the connection is closed, which ends this goroutine.
				if _, err := packets.NewControlPacket(packets.PINGREQ).WriteTo(conn); err != nil {
					select {
					case errs <- fmt.Errorf("PINGREQ not sent: %w", err):
					default:
					}
				}
			}()
			p.PacketSent()
		}
	}
}

func (p *pinger) PacketSent() {
	p.mu.Lock()
	p.sent = time.Now()
	p.mu.Unlock()
}

func (p *pinger) PacketReceived() {
	p.mu.Lock()
	p.received = time.Now()
	p.mu.Unlock()
}

func (p *pinger) PingResp() { p.PacketReceived() }

func (p *pinger) SetDebug(log.Logger) {}

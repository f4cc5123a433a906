package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dssio/dss/internal/procstat"
)

// idleKeepAlive is the Keep Alive of an idle run's connections, in
// seconds: a device's usual minute. Each sends a PINGREQ every half of
// it, as a client library does, so that a run may be as long as wanted.
const idleKeepAlive = 60

// runIdle connects the clients, holds the connections for the duration
// sending only PINGREQs, and reports the server's memory before the
// first connection and after the last, to show what a connection costs it.
func runIdle(ctx context.Context, cfg *Config, progress io.Writer) (*Report, error) {
	rep := newReport(cfg)
	withKeepAlive := *cfg
	withKeepAlive.keepAlive = idleKeepAlive
	cfg = &withKeepAlive
	rep.WarmupSeconds = 0
	u0, err := procstat.Read(cfg.ServerPID)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "connecting %d idle clients to %s\n", cfg.Clients, cfg.Server)
	conns, err := dialAll(ctx, cfg, cfg.ClientID, cfg.Clients, cfg.responseQoS(), nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	rep.Connections = len(conns)
	fmt.Fprintf(progress, "holding %d connections for %v\n", len(conns), cfg.Duration)
	t := time.NewTimer(cfg.Duration)
	defer t.Stop()
	ping := time.NewTicker(idleKeepAlive * time.Second / 2)
	defer ping.Stop()
hold:
	for {
		select {
		case <-t.C:
			break hold
		case <-ctx.Done():
			break hold
		case <-ping.C:
			if err := pingAll(conns, cfg.ConnectTimeout); err != nil {
				return nil, err
			}
		}
	}
	u1, err := procstat.Read(cfg.ServerPID)
	if err != nil {
		return nil, err
	}
	rep.Seconds = u1.At.Sub(u0.At).Seconds()
	rep.addUsage(u0, u1, 0)
	return rep, nil
}

// pingreq is an MQTT PINGREQ packet.
var pingreq = []byte{0xc0, 0x00}

// pingAll sends a PINGREQ on every connection, each write bounded by
// timeout. The PINGRESPs are left unread: two bytes each, which the
// connections' sockets hold.
func pingAll(conns []*conn, timeout time.Duration) error {
	for _, c := range conns {
		_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := c.nc.Write(pingreq); err != nil {
			return fmt.Errorf("%s: pingreq: %w", c.id, err)
		}
	}
	return nil
}

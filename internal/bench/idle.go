package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/dssio/dss/internal/procstat"
)

// runIdle connects the clients, holds the connections for the duration
// without sending anything, and reports the server's memory before the
// first connection and after the last, to show what a connection costs it.
func runIdle(ctx context.Context, cfg *Config, progress io.Writer) (*Report, error) {
	rep := newReport(cfg)
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
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	u1, err := procstat.Read(cfg.ServerPID)
	if err != nil {
		return nil, err
	}
	rep.Seconds = u1.At.Sub(u0.At).Seconds()
	rep.addUsage(u0, u1, 0)
	return rep, nil
}

package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dssio/dss/internal/buildinfo"
	"github.com/dssio/dss/internal/console"
)

// newConsole builds the web console of the HTTP listener (see package
// console), which reads its figures from reg and the server.
func (s *Server) newConsole(reg *prometheus.Registry) *console.Console {
	started := time.Now()
	if !isLoopback(s.httpLn.Addr().String()) && s.cfg.Users != "" {
		s.log.Warn("passwords of the web console cross the network in clear text: the HTTP listener has no TLS; keep --http-listen on loopback or put a TLS proxy in front of it", "listener", s.httpLn.Addr().String())
	}
	return console.New(console.Config{
		Auth:       s.sec.authority,
		SignIn:     s.cfg.Users != "",
		WSAddr:     s.broker.WSAddr(),
		WSSAddr:    s.broker.WSSAddr(),
		AdminToken: s.cfg.AdminToken,
		Revoke:     s.broker.Reauthorize,
		LoginDelay: s.cfg.LoginDelay,
		Logger:     s.log,
		Status: func(ctx context.Context) console.Status {
			return s.consoleStatus(ctx, reg, started)
		},
	})
}

// consoleStatus gathers the node's figures for /v1/status.
func (s *Server) consoleStatus(ctx context.Context, reg *prometheus.Registry, started time.Time) console.Status {
	st := console.Status{
		Node:    s.cfg.NodeID,
		Version: buildinfo.Get().Version,
		Started: started,
		Time:    time.Now(),
		Clients: s.broker.Clients(),
	}
	if err := s.Ready(); err != nil {
		st.NotReady = err.Error()
	}
	stats := s.node.Stats()
	st.Keys, st.StoreBytes = int64(stats.Keys), stats.Bytes
	st.MessagesReceived, st.MessagesSent = s.broker.Messages()
	if families, err := reg.Gather(); err == nil {
		st.Requests = counterSum(families, "dss_requests_total")
		st.Notifications = counterSum(families, "dss_notifications_total")
	}
	if s.cluster != nil {
		c := &console.ClusterStatus{}
		cs, err := s.cluster.Status(ctx)
		if err != nil {
			c.Error = err.Error()
		}
		c.Leader, c.Term, c.CommitIndex = cs.Leader, cs.Term, cs.CommitIndex
		for _, m := range cs.Members {
			c.Members = append(c.Members, console.Member{
				ID: m.ID, Addr: m.Addr, Voter: m.Voter, State: m.Local.State,
				AppliedIndex: m.Local.AppliedIndex, Lag: m.Lag, Error: m.Err,
			})
		}
		st.Cluster = c
	}
	return st
}

// counterSum returns the sum of the series of the counter name.
func counterSum(families []*dto.MetricFamily, name string) int64 {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		return int64(sum)
	}
	return 0
}

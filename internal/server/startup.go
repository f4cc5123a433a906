package server

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/buildinfo"
)

// dataDir makes a data directory absolute, so that the logs say where the
// state is whatever directory the server was started from, and reports
// whether it holds no state yet (missing or empty): a server started from
// another directory than usual says so rather than serving an empty store
// in silence.
func dataDir(dir string) (abs string, isNew bool, err error) {
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", false, fmt.Errorf("server: data directory %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case os.IsNotExist(err):
		return abs, true, nil
	case err != nil:
		return "", false, fmt.Errorf("server: data directory: %w", err)
	}
	return abs, len(entries) == 0, nil
}

// listenerAddrs lists every listener of the server by what it serves, for
// the start-up line. A listener added to the server belongs here.
func (s *Server) listenerAddrs() []any {
	var attrs []any
	if s.attach != nil {
		attrs = append(attrs, "attached_to", s.attach.Broker())
	} else {
		attrs = append(attrs, "mqtt", s.Addr())
	}
	if a := s.TLSAddr(); a != "" {
		attrs = append(attrs, "mqtts", a)
	}
	if a := s.WSAddr(); a != "" {
		attrs = append(attrs, "ws", a)
	}
	if a := s.WSSAddr(); a != "" {
		attrs = append(attrs, "wss", a)
	}
	if a := s.HTTPAddr(); a != "" {
		attrs = append(attrs, "http", a)
	}
	if a := s.ClusterAddr(); a != "" {
		attrs = append(attrs, "cluster", a)
	}
	return attrs
}

// authentication says how clients are authenticated, for the start-up
// line: "none" while no users or client certificates are configured.
func (s *Server) authentication() string {
	if s.attach != nil {
		return "the broker's"
	}
	return s.sec.describe(&s.cfg)
}

// logStarted writes the start-up line: which build serves, where the state
// is, every listener and whether clients are authenticated.
func (s *Server) logStarted() {
	in := buildinfo.Get()
	attrs := []any{"version", in.Version, "commit", in.ShortCommit(), "go", in.GoVersion, "node", s.cfg.NodeID}
	if s.cfg.DataDir == "" {
		attrs = append(attrs, "data", "in memory")
	} else {
		attrs = append(attrs, "data", s.cfg.DataDir)
		if s.newDataDir {
			attrs = append(attrs, "new_data_dir", true)
		}
	}
	attrs = append(attrs, s.listenerAddrs()...)
	attrs = append(attrs, "auth", s.authentication())
	// The memory the memory-derived defaults (--max-store-bytes,
	// --max-queued-bytes) are shares of, and which limit it is.
	mem := serverMemory()
	attrs = append(attrs, "memory", humanBytes(mem.bytes), "memory_from", mem.source)
	s.log.Info("dss serving", attrs...)
}

// buildInfoMetric is dss_build_info: always 1, with the build in its
// labels, so that dashboards can tell which version every node runs.
func buildInfoMetric() prometheus.Collector {
	in := buildinfo.Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dss_build_info",
		Help: "The build of dss that is running: always 1, with version, commit and Go release as labels.",
	}, []string{"version", "commit", "goversion"})
	g.WithLabelValues(in.Version, in.Commit, in.GoVersion).Set(1)
	return g
}

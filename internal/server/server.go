// Package server wires a dss node together: the engine with its journal,
// the front end that requests come through (the MQTT broker with the
// state store bound to it, or with Config.Attach a client of another
// broker), and the HTTP endpoint for metrics and health. It owns their
// lifecycle: New, Start, Shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/console"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/store"
)

// frontEnd is how requests reach the store: dss's own MQTT broker
// (*broker.Broker), or a client of another broker (*attach.Attacher).
type frontEnd interface {
	Notifier() engine.Notifier
	Start(store service.Store) error
	Drain()
	Close(grace time.Duration) error
}

var (
	_ frontEnd = (*broker.Broker)(nil)
	_ frontEnd = (*attach.Attacher)(nil)
)

// Server is one dss node.
type Server struct {
	cfg     Config
	log     *slog.Logger
	front   frontEnd
	broker  *broker.Broker   // nil when attached to another broker
	attach  *attach.Attacher // nil unless attached to another broker
	node    *engine.Node
	cluster *cluster.Node    // nil for a single node
	journal *journal.Journal // nil in memory or in a cluster
	http    *http.Server
	httpLn  net.Listener
	console *console.Console // nil without the HTTP listener, or when attached
	// httpConns bounds the HTTP endpoint's connections.
	httpConns *httpConns
	sec       *security
	// reloadMu serializes reloads of the security files.
	reloadMu    sync.Mutex
	stopReloads context.CancelFunc
	reloadsDone chan struct{}

	// newDataDir reports a data directory that held no state at start.
	newDataDir bool
	// readiness lists the conditions of /readyz beyond the server's own.
	readiness []ReadinessCheck
	// started and stopping bound the time the server is ready.
	started, stopping atomic.Bool

	shutdownOnce sync.Once
	shutdownErr  error
}

// New builds a server from cfg and binds its listeners, so that their
// addresses are known before Start.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(buildInfoMetric())
	reg.MustRegister(s.gauges()...)

	ecfg := engine.Config{
		Clock:        hlc.NewClock(cfg.NodeID, cfg.Now),
		MaxSkew:      cfg.MaxClockSkew,
		Logger:       cfg.Logger,
		VolatileKeys: cfg.Persistence == PersistFlagged,
	}
	// Recover first: the listener opens only once the state is there.
	if cfg.DataDir != "" {
		var err error
		if cfg.DataDir, s.newDataDir, err = dataDir(cfg.DataDir); err != nil {
			return nil, err
		}
		s.cfg.DataDir = cfg.DataDir
	}
	if cfg.Cluster.Listen != "" {
		jm := newJournalMetrics()
		reg.MustRegister(jm.collectors()...)
		cn, err := newClusterNode(cfg, jm.timings())
		if err != nil {
			return nil, err
		}
		s.cluster = cn
		ecfg.Log = cn
		// Every node hashes keys alike, so that scans go on anywhere.
		ecfg.Machine = store.NewKeyed(cn.HashKey())
		reg.MustRegister(cn.Collectors()...)
		s.readiness = append(s.readiness, cn)
	} else if cfg.DataDir != "" {
		start := time.Now()
		jm := newJournalMetrics()
		reg.MustRegister(jm.collectors()...)
		j, m, err := journal.Open(journal.Options{
			Dir:           cfg.DataDir,
			Fsync:         cfg.Fsync,
			SnapshotAfter: cfg.SnapshotAfter,
			Logger:        cfg.Logger,
			Timings:       jm.timings(),
		})
		if err != nil {
			return nil, err
		}
		s.journal = j
		ecfg.Machine, ecfg.Journal = m, journalAdapter{j}
		cfg.Logger.Info("state recovered", "dir", cfg.DataDir, "keys", m.Len(),
			"took", time.Since(start).Round(time.Millisecond), "fsync", cfg.Fsync, "persistence", cfg.Persistence)
	}
	if cfg.Attach != nil {
		if err := s.newAttacher(reg); err != nil {
			s.closeStorage()
			return nil, err
		}
	} else if err := s.newBroker(reg); err != nil {
		return nil, err
	}
	ecfg.Notifier = s.front.Notifier()
	if ecfg.Machine == nil {
		ecfg.Machine = store.New()
	}
	ecfg.Machine.SetLimits(storeLimits(cfg))
	s.node = engine.New(ecfg)
	if cfg.HTTPListen != "" {
		ln, err := net.Listen("tcp", cfg.HTTPListen)
		if err != nil {
			_ = s.front.Close(0)
			s.closeStorage()
			return nil, fmt.Errorf("server: http listener on %s: %w", cfg.HTTPListen, err)
		}
		s.httpLn = ln
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			if err := s.storageErr(); err != nil {
				http.Error(w, "failing: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
			if s.broker != nil {
				if err := s.broker.Accepting(); err != nil {
					http.Error(w, "failing: "+err.Error(), http.StatusServiceUnavailable)
					return
				}
			}
			_, _ = w.Write([]byte("ok\n"))
		})
		mux.HandleFunc("GET /readyz", s.serveReady)
		mux.HandleFunc("GET "+SnapshotPath, s.adminOnly(s.serveSnapshot))
		if s.broker != nil {
			// The console's page logs in over dss's own WebSocket
			// listener: attached to another broker, there is none.
			s.console = s.newConsole(reg)
			s.console.Register(mux)
		}
		if cfg.Pprof {
			// The profiles show the server's memory, keys and values
			// among it: the admin token guards them as it guards
			// backups (without one, they answer this machine only).
			mux.HandleFunc("GET /debug/pprof/", s.adminOnly(pprof.Index))
			mux.HandleFunc("GET /debug/pprof/cmdline", s.adminOnly(pprof.Cmdline))
			mux.HandleFunc("GET /debug/pprof/profile", s.adminOnly(pprof.Profile))
			mux.HandleFunc("GET /debug/pprof/symbol", s.adminOnly(pprof.Symbol))
			mux.HandleFunc("GET /debug/pprof/trace", s.adminOnly(pprof.Trace))
			cfg.checkPprof(ln.Addr().String(), cfg.Logger)
		}
		// A connection idle between requests is closed after
		// HTTPIdleTimeout, or earlier to make room for a new one: idle
		// keep-alive connections were kept for good, and enough of them
		// took every descriptor the MQTT listeners had.
		s.httpConns = newHTTPConns(cfg.HTTPMaxConnections)
		s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cfg.HTTPIdleTimeout,
			ConnState: s.httpConns.track}
	}
	return s, nil
}

// Addr returns the address of the MQTT listener, or "" when attached to
// another broker.
func (s *Server) Addr() string {
	if s.broker == nil {
		return ""
	}
	return s.broker.Addr()
}

// TLSAddr returns the address of the TLS listener, or "" when there is
// none.
func (s *Server) TLSAddr() string {
	if s.broker == nil {
		return ""
	}
	return s.broker.TLSAddr()
}

// HTTPAddr returns the address of the metrics and health endpoint, or ""
// when it is off.
func (s *Server) HTTPAddr() string {
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// Start starts serving.
func (s *Server) Start() error {
	s.node.Start()
	var store service.Store = s.node
	if s.cluster != nil {
		if err := s.cluster.Start(s.node); err != nil {
			_ = s.cluster.Close()
			_ = s.node.Close()
			return err
		}
		store = s.cluster
	}
	if err := s.front.Start(store); err != nil {
		if s.cluster != nil {
			_ = s.cluster.Close()
		}
		_ = s.node.Close()
		return err
	}
	if s.console != nil {
		s.console.Start()
	}
	if s.http != nil {
		go func() {
			if err := s.http.Serve(s.httpConns.Listen(s.httpLn)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http endpoint stopped", "err", err)
			}
		}()
	}
	s.started.Store(true)
	s.logStarted()
	if s.broker != nil && !s.cfg.Authenticates() && isLoopback(s.Addr()) {
		s.log.Info("no authentication configured: serving this machine only (loopback); configure users or client certificates to serve the network")
	}
	if s.cfg.ReloadInterval > 0 && (s.sec.users != nil || s.sec.policy != nil || s.sec.certs != nil) {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopReloads, s.reloadsDone = cancel, make(chan struct{})
		go func() {
			defer close(s.reloadsDone)
			s.watchReloads(ctx, s.cfg.ReloadInterval)
		}()
	}
	return nil
}

// Shutdown stops the server gracefully: it refuses new requests, answers
// every request already accepted, flushes what must be durable and
// disconnects the clients. ctx bounds the wait for clients to acknowledge
// the last responses. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	if s.stopReloads != nil {
		s.stopReloads()
		<-s.reloadsDone
	}
	s.front.Drain()
	var clusterErr error
	if s.cluster != nil {
		// Writes not yet committed are answered before the engine stops.
		clusterErr = s.cluster.Close()
	}
	nodeErr := s.node.Close()
	grace := 2 * time.Second
	if d, ok := ctx.Deadline(); ok {
		grace = time.Until(d)
	}
	brokerErr := s.front.Close(grace)
	var journalErr, httpErr error
	if s.journal != nil {
		journalErr = s.journal.Close()
	}
	if s.http != nil {
		httpErr = s.http.Shutdown(ctx)
	}
	if s.console != nil {
		s.console.Close()
	}
	// The node stopped on the journal's error, which the journal's Close
	// returns again: report it once.
	return errors.Join(clusterErr, nodeErr, brokerErr, withoutRepeat(journalErr, nodeErr), httpErr)
}

// withoutRepeat returns err without the parts that seen, reported
// already, holds: err itself, or the parts of a join (at any depth).
func withoutRepeat(err, seen error) error {
	if err == nil || seen == nil {
		return err
	}
	if errors.Is(seen, err) {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var rest []error
	for _, e := range joined.Unwrap() {
		if e = withoutRepeat(e, seen); e != nil {
			rest = append(rest, e)
		}
	}
	if len(rest) == len(joined.Unwrap()) {
		return err // nothing repeated: keep err as it is
	}
	return errors.Join(rest...)
}

// storageErr returns the error that stopped the node's writes: a
// journal that failed, which the node learns at its next write and the
// journal may know before (a file of it removed while the server is
// idle), or in a cluster a Raft file that went away.
func (s *Server) storageErr() error {
	if err := s.node.Err(); err != nil {
		return err
	}
	if s.cluster != nil {
		if err := s.cluster.StorageErr(); err != nil {
			return err
		}
	}
	if s.journal != nil {
		return s.journal.Err()
	}
	return nil
}

// closeStorage closes what New opened to keep the state, after a failure.
func (s *Server) closeStorage() {
	if s.journal != nil {
		_ = s.journal.Close()
	}
	if s.cluster != nil {
		_ = s.cluster.Close()
	}
}

// journalAdapter gives the journal the method set the engine expects.
type journalAdapter struct{ *journal.Journal }

func (a journalAdapter) BeginSnapshot(seq uint64, maxVersion hlc.Timestamp) (engine.SnapshotWriter, error) {
	w, err := a.Journal.BeginSnapshot(seq, maxVersion)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Run starts the server, serves until ctx is done and then shuts down.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	s.log.Info("dss shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Shutdown(sctx)
}

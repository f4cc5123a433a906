package cli

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/server"
)

// storeFlags are the settings of the store that dss serve and dss attach
// share: its data, durability, limits, cluster, HTTP endpoint and logs.
type storeFlags struct {
	logLevel, logFormat, fsync, persistence, adminTokenFile string
	inMemory                                                bool
	cluster                                                 clusterFlags
}

// add adds the flags to cmd, and --config.
func (sf *storeFlags) add(cmd *cobra.Command, cfg *server.Config) {
	f := cmd.Flags()
	f.StringVar(&cfg.HTTPListen, "http-listen", "", "address of the HTTP endpoint (HOST:PORT) with /metrics, /healthz, /readyz, GET /v1/snapshot for backups and, for dss serve with --ws-listen, the web console at /; empty turns it off")
	f.StringVar(&sf.adminTokenFile, "admin-token-file", "", "file holding the secret (16 characters or more) that a backup request on the HTTP endpoint must carry (Authorization: Bearer); without it only clients on this machine may fetch one")
	durationFlag(f, &cfg.HTTPIdleTimeout, "http-idle-timeout", server.DefaultHTTPIdleTimeout, "how long a connection to the HTTP endpoint may stay idle between requests before it is closed")
	f.IntVar(&cfg.HTTPMaxConnections, "http-max-connections", server.DefaultHTTPMaxConnections, "most connections the HTTP endpoint holds; past it a new one takes the place of the one idle the longest, or waits to be accepted")
	f.BoolVar(&cfg.Pprof, "pprof", false, "serve the Go profiler under /debug/pprof/ on the HTTP endpoint, to clients on this machine or with the admin token (--admin-token-file)")
	f.StringVar(&cfg.NodeID, "node-id", "", "node id stamped on every version this node issues (default: the host name)")
	durationFlag(f, &cfg.MaxClockSkew, "max-clock-skew", time.Minute, "how far ahead of the server clock a request's __ts or __ft may be")
	f.IntVar(&cfg.MaxKeys, "max-keys", server.DefaultMaxKeys, "most keys stored; a SET of a new key past it is answered 'the quota has been exceeded' (-1: no limit)")
	sizeFlag(f, &cfg.MaxStoreBytes, "max-store-bytes", 0, "most bytes of keys and values stored; a SET that would grow the store past it is answered 'the quota has been exceeded' (0: a quarter of the memory, the machine's or its control group's limit; -1: no limit)")
	sizeFlag(f, &cfg.MaxKeySize, "max-key-size", broker.DefaultMaxKeySize, "longest key of a request; client ids may be as long as leaves room for the notification topic of such a key")
	sizeFlag(f, &cfg.MaxValueSize, "max-value-size", broker.DefaultMaxValueSize, "longest value of a request")
	f.StringVar(&cfg.DataDir, "data", "dss-data", "data directory: the journal and snapshots that keep the state across restarts")
	f.BoolVar(&sf.inMemory, "in-memory", false, "keep nothing on disk: the state is gone when the server stops")
	enumFlag(f, &sf.fsync, "fsync", "always", []string{"always", "everysec", "no"}, "when changes reach stable storage: always (before each response), everysec (once a second) or no (left to the OS)")
	enumFlag(f, &sf.persistence, "persistence", "all", []string{"all", "flagged"}, "which keys survive a restart: all, or flagged (only keys written with the user property aio-persistence=true)")
	sf.cluster.add(f)
	sizeFlag(f, &cfg.SnapshotAfter, "snapshot-after", 64<<20, "bytes a snapshot must save to be due: once the journal outgrows it and the last snapshot, or once the data would make a snapshot this much and half smaller than the last")
	enumFlag(f, &sf.logLevel, "log-level", "info", []string{"debug", "info", "warn", "error"}, "log level: debug, info, warn or error")
	enumFlag(f, &sf.logFormat, "log-format", "text", []string{"text", "json"}, "log format: text or json")
	addConfigFlag(cmd)
}

// apply puts the settings that need reading into cfg, and returns the
// logger they ask for.
func (sf *storeFlags) apply(stdio Stdio, cfg *server.Config) (*slog.Logger, error) {
	logger, err := newLogger(stdio, sf.logLevel, sf.logFormat)
	if err != nil {
		return nil, err
	}
	cfg.Logger = logger
	if cfg.Fsync, err = journal.ParseFsync(sf.fsync); err != nil {
		return nil, fmt.Errorf("--fsync: %w", err)
	}
	if cfg.Persistence, err = server.ParsePersistence(sf.persistence); err != nil {
		return nil, fmt.Errorf("--persistence: %w", err)
	}
	if sf.inMemory {
		cfg.DataDir = ""
	} else if cfg.DataDir == "" {
		return nil, fmt.Errorf("--data: a data directory is required unless --in-memory is given")
	}
	if err := sf.cluster.apply(cfg); err != nil {
		return nil, err
	}
	if cfg.AdminToken, err = readAdminToken("--admin-token-file", sf.adminTokenFile); err != nil {
		return nil, err
	}
	return logger, nil
}

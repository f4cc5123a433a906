package cli

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/tuning"
)

func newServeCmd(stdio Stdio) *cobra.Command {
	cmd, _ := newServeCommand(stdio)
	return cmd
}

// newServeCommand returns dss serve and the function that resolves its
// settings into the server's configuration, refusing what serve refuses
// before it starts anything.
func newServeCommand(stdio Stdio) (*cobra.Command, func(*cobra.Command) (server.Config, *settings, error)) {
	var build func(*cobra.Command) (server.Config, *settings, error)
	var cfg server.Config
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the MQTT 5 broker with the state store",
		Long: `Run the MQTT 5 broker with the state store bound to its request topic
statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke.

The broker is a full MQTT 5 broker for ordinary publish/subscribe as well.
SIGINT or SIGTERM shut it down gracefully: new requests are refused, every
accepted request is answered, and the process exits with status 0.

Every flag is a setting that can also be given as an environment variable
(DSS_ and the name in upper case, '-' as '_': DSS_FSYNC=everysec) or as a
key of the YAML file named by --config or DSS_CONFIG (fsync: everysec).
The command line wins over the environment, the environment over the file,
the file over the defaults. dss config print shows the outcome.

Without authentication configured, the server listens on loopback only
(127.0.0.1:1883). With a users file (--users) or client certificates
(--tls-client-ca), every client authenticates, and a policy (--policy)
says what each may do. SIGHUP re-reads the users file, the policy and the
TLS files (which are also re-read when they change).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopWithGoRun()
			cfg, _, err := build(cmd)
			if err != nil {
				return err
			}
			// The process is the server's: tune the Go runtime for it
			// (package tuning says what and why).
			defer tuning.ForServer(tuning.Options{
				SyncEveryWrite: cfg.DataDir != "" && cfg.Fsync == journal.FsyncAlways,
				ClusterNode:    cfg.Cluster.Listen != "",
				Logger:         cfg.Logger,
			})()
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			stopReload := reloadOnHangup(srv)
			defer stopReload()
			return srv.Run(cmd.Context())
		},
	}
	// serveConfig is cfg, which the flags fill in, completed: a copy, so
	// that the flags keep the values given.
	serveConfig := func(st *settings) (server.Config, error) {
		cfg := cfg
		if err := validateServe(cmd.Flags(), st); err != nil {
			return cfg, err
		}
		if _, err := sf.apply(stdio, &cfg); err != nil {
			return cfg, err
		}
		return cfg, nil
	}
	// build resolves and checks the settings and returns the server's
	// configuration: dss serve runs it, dss config print checks it.
	build = func(cmd *cobra.Command) (server.Config, *settings, error) {
		st, err := resolveSettings(cmd)
		if err != nil {
			return server.Config{}, nil, err
		}
		cfg, err := serveConfig(st)
		return cfg, st, err
	}
	f := cmd.Flags()
	sf.add(cmd, &cfg)
	f.StringVar(&cfg.Listen, "listen", "", "MQTT listener address HOST:PORT (default 127.0.0.1:1883, loopback only, while no authentication is configured; :1883 with --users and no TLS)")
	f.BoolVar(&cfg.AllowAnonymous, "allow-anonymous", false, "admit clients without authentication on a listener beyond loopback (a warning at start); with --users or --tls-client-ca, admit clients that present no credentials")
	f.StringVar(&cfg.Users, "users", "", "users file of names and argon2id password hashes, written by dss passwd; clients log in with a user name and password")
	f.StringVar(&cfg.Policy, "policy", "", "authorization policy file (YAML): what each principal may connect, publish, subscribe, read and write; anything not granted is denied (re-read on SIGHUP or when it changes)")
	f.StringVar(&cfg.TLSListen, "tls-listen", "", "TLS listener address HOST:PORT (default :8883 with authentication configured, 127.0.0.1:8883 without; needs --tls-cert and --tls-key)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM file of the TLS listener's certificate chain (re-read on SIGHUP or when it changes)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM file of the TLS certificate's private key")
	f.StringVar(&cfg.TLSClientCA, "tls-client-ca", "", "PEM file of the CAs that sign client certificates: clients may log in with a certificate (required without --users)")
	addWebFlags(f, &cfg)
	sizeFlag(f, &cfg.MaxPacketSize, "max-packet-size", server.DefaultMaxPacketSize, "largest MQTT packet accepted, such as 64MiB (the protocol's limit is 268435455 bytes)")
	f.IntVar(&cfg.MaxInflightPerClient, "max-inflight-per-client", broker.DefaultMaxInflightPerClient, "most unanswered requests of one connection; past it the connection is not read until one is answered (TCP back-pressure; -1: no limit)")
	sizeFlag(f, &cfg.MaxSessionQueueBytes, "max-queued-bytes-per-session", server.DefaultMaxSessionQueueBytes, "most bytes of QoS 1 and 2 messages one session holds, queued without a connection or held until its client can take them; past it its oldest never sent are dropped (-1: no limit)")
	sizeFlag(f, &cfg.MaxQueuedBytes, "max-queued-bytes", 0, "most bytes of QoS 1 and 2 messages all sessions hold, queued or held; past it the oldest never sent of the session being fed are dropped (0: a sixteenth of the memory, the machine's or its control group's limit; -1: no limit)")
	f.IntVar(&cfg.MaxWatchesPerClient, "max-keynotify-per-client", server.DefaultMaxWatchesPerClient, "most KEYNOTIFY registrations of one connection (-1: no limit)")
	f.IntVar(&cfg.MaxSubscriptionsPerClient, "max-subscriptions-per-client", server.DefaultMaxSubscriptionsPerClient, "most topic filters one client's session holds; a new one past it gets SUBACK 0x97 (-1: no limit)")
	f.IntVar(&cfg.MaxRetained, "max-retained-messages", server.DefaultMaxRetained, "most retained messages; a client's message to retain on a new topic past it gets PUBACK 0x97 (a QoS 0 one is dropped) (-1: no limit)")
	sizeFlag(f, &cfg.MaxRetainedBytes, "max-retained-bytes", 0, "most bytes of retained messages; a message to retain that grows them past it gets PUBACK 0x97 (0: a sixteenth of the memory, the machine's or its control group's limit; -1: no limit)")
	f.IntVar(&cfg.MaxTopicLevels, "max-topic-levels", server.DefaultMaxTopicLevels, "most levels of a topic or filter a client sends; past it a SUBSCRIBE or UNSUBSCRIBE filter gets 0x8F, a publish PUBACK 0x90, a Will CONNACK 0x90 (-1: no limit)")
	f.IntVar(&cfg.MaxTopicLength, "max-topic-length", server.DefaultMaxTopicLength, "most bytes of a topic or filter a client sends, refused past it as for --max-topic-levels (-1: no limit)")
	durationFlag(f, &cfg.ConnectTimeout, "connect-timeout", 10*time.Second, "how long a new connection has to send its whole CONNECT packet")
	durationFlag(f, &cfg.PacketReadTimeout, "packet-read-timeout", broker.DefaultPacketReadTimeout, "how long the bytes of a packet may stop coming, once it began, before its connection is closed, whatever the keep alive")
	caps := broker.DefaultCapabilities()
	cfg.Capabilities = &caps
	durationFlag(f, &caps.MaxKeepAlive, "max-keepalive", caps.MaxKeepAlive, "longest keep alive of an MQTT 5 client, sent as Server Keep Alive to one that asks for more or for none (0: no cap; whole seconds up to 18h12m15s)")
	f.Uint8Var(&caps.MaxQoS, "max-qos", caps.MaxQoS, "highest QoS clients may publish and subscribe with: 1 or 2 (the state store needs 1)")
	f.BoolVar(&caps.RetainAvailable, "retain-available", caps.RetainAvailable, "let clients retain messages (false: a PUBLISH with RETAIN ends an MQTT 5 connection with DISCONNECT 0x9A)")
	f.BoolVar(&caps.WildcardSubscriptions, "wildcard-subscriptions", caps.WildcardSubscriptions, "let clients subscribe with + and # (false: SUBACK 0xA2)")
	f.BoolVar(&caps.SharedSubscriptions, "shared-subscriptions", caps.SharedSubscriptions, "let clients subscribe to $share/GROUP/FILTER (false: SUBACK 0x9E)")
	f.Uint16Var(&caps.TopicAliasMaximum, "topic-alias-maximum", caps.TopicAliasMaximum, "topic aliases a client may set on its publishes (0: none)")
	f.Uint16Var(&caps.ReceiveMaximum, "receive-maximum", caps.ReceiveMaximum, "QoS 1 and 2 publishes a client may have unacknowledged by the server (1 to 65535; one more: DISCONNECT 0x93)")
	f.IntVar(&cfg.ReadLoops, "read-loops", 0, "read loops (epoll, Linux) that serve busy connections and hold idle ones, instead of a goroutine each (0: one per CPU the server may use; -1: none)")
	return cmd, build
}

func newLogger(stdio Stdio, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(stdio.Err, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stdio.Err, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

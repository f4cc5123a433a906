package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/tuning"
)

func newAttachCmd(stdio Stdio) *cobra.Command {
	var cfg server.Config
	var acfg attach.Config
	var sf storeFlags
	var sec securityFlags
	var presence string
	cmd := &cobra.Command{
		Use:   "attach --broker mqtt://HOST:PORT",
		Short: "Serve the state store to the clients of another MQTT 5 broker",
		Long: `Serve the state store to the clients of an MQTT 5 broker you already run
(Mosquitto, EMQX, HiveMQ, ...): dss connects to it as a client, takes the
requests published to
statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke through
the shared subscription $share/dss/..., answers each on its response topic
exactly as dss serve does, and publishes KEYNOTIFY notifications on the
clients' notification topics. The store is dss serve's: journal, fsync,
limits, snapshots, backups, and a Raft cluster of attached instances with
--cluster-listen and --peers. Several instances attached to one broker
share its requests.

dss reconnects with back-off when the broker restarts or refuses it, and
keeps its state meanwhile; /readyz answers 503 while it is not connected
and subscribed. The broker's ACLs decide who may send requests and read
responses and notifications: see docs/attach.md, and deploy/mosquitto/
for a Mosquitto configuration.

Every flag is a setting that can also be given as an environment variable
(DSS_ and the name in upper case, '-' as '_': DSS_BROKER=mqtt://mq:1883,
DSS_PASSWORD) or as a key of the YAML file named by --config or DSS_CONFIG.
The command line wins over the environment, the environment over the
file, the file over the defaults.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stopWithGoRun()
			st, err := resolveSettings(cmd)
			if err != nil {
				return err
			}
			if err := validateServe(cmd.Flags(), st); err != nil {
				return err
			}
			if acfg.Broker == "" {
				return errors.New("--broker: the URL of the broker to attach to is required, such as mqtt://localhost:1883 or mqtts://broker.example:8883")
			}
			u, err := attach.BrokerURL(acfg.Broker)
			if err != nil {
				return fmt.Errorf("--broker: %w", err)
			}
			if acfg.Presence, err = attach.ParsePresence(presence); err != nil {
				return fmt.Errorf("--presence: %w", err)
			}
			if u.Scheme == "mqtts" || sec.ca != "" || sec.cert != "" || sec.key != "" {
				if u.Scheme != "mqtts" {
					return fmt.Errorf("--ca, --cert and --key need a broker URL of the scheme mqtts:// (TLS), not %s", u.Redacted())
				}
				if acfg.TLS, err = client.LoadTLS(sec.ca, sec.cert, sec.key); err != nil {
					return err
				}
			}
			acfg.Username, acfg.Password = sec.username, sec.passwordBytes()
			logger, err := sf.apply(stdio, &cfg)
			if err != nil {
				return err
			}
			if acfg.ClientID == "" {
				id := cfg.NodeID
				if id == "" {
					id = server.DefaultNodeID()
				}
				acfg.ClientID = "dss-" + id
			}
			cfg.Attach = &acfg
			defer tuning.ForServer(tuning.Options{
				SyncEveryWrite: cfg.DataDir != "" && cfg.Fsync == journal.FsyncAlways,
				ClusterNode:    cfg.Cluster.Listen != "",
				Logger:         logger,
			})()
			srv, err := server.New(cfg)
			if err != nil {
				return err
			}
			return srv.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	sf.add(cmd, &cfg)
	f.StringVar(&acfg.Broker, "broker", "", "URL of the MQTT 5 broker to attach to: mqtt://HOST:PORT, or mqtts://HOST:PORT for TLS (required)")
	f.StringVar(&sec.username, "username", "", "user name dss logs in to the broker with")
	f.StringVar(&sec.password, "password", "", "password dss logs in to the broker with (better: the environment variable DSS_PASSWORD, which no process list shows)")
	f.StringVar(&sec.ca, "ca", "", "PEM file of the CA that signs the broker's certificate (mqtts://; default: the system's roots)")
	f.StringVar(&sec.cert, "cert", "", "PEM file of dss's client certificate, for a broker that takes them (with --key)")
	f.StringVar(&sec.key, "key", "", "PEM file of the client certificate's key")
	f.StringVar(&acfg.ClientID, "client-id", "", "dss's client id at the broker; instances attached to one broker need different ones (default: dss- and the node id)")
	f.StringVar(&acfg.Group, "group", attach.DefaultGroup, "shared subscription group of the request topic: the instances of one group share the requests")
	durationFlag(f, &acfg.SessionExpiry, "session-expiry", attach.DefaultSessionExpiry, "how long the broker keeps dss's session, and the requests sent to it, while dss is not connected (0: not at all)")
	durationFlag(f, &acfg.KeepAlive, "keepalive", attach.DefaultKeepAlive, "MQTT keep alive of dss's connection to the broker")
	enumFlag(f, &presence, "presence", "none", []string{"none", "mosquitto", "emqx"}, "where dss learns that a client left, to drop its KEYNOTIFY registrations: none (registrations last their lease), mosquitto (its log on $SYS/broker/log/N and /I: log_dest topic), emqx (its $SYS client events)")
	durationFlag(f, &acfg.Lease, "keynotify-lease", 0, "how long a KEYNOTIFY registration, of a key or a pattern, lasts unless the client sends the same KEYNOTIFY again (0: 10m, or 24h with --presence)")
	durationFlag(f, &acfg.RetryWindow, "retry-window", attach.DefaultRetryWindow, "how long a request is remembered so that the same request arriving again (the broker's redelivery, a client's retry with the same correlation data) is not carried out twice")
	sizeFlag(f, &acfg.MaxQueuedBytes, "max-outbox-bytes", attach.DefaultMaxQueuedBytes, "most bytes of responses and notifications waiting for the broker (while dss is away from it), such as 256MiB; past it new ones are dropped and counted (-1: no limit)")
	f.IntVar(&cfg.MaxWatchesPerClient, "max-keynotify-per-client", server.DefaultMaxWatchesPerClient, "most KEYNOTIFY registrations of one client id, keys and patterns together (-1: no limit)")
	markSecret(f, "password")
	cmd.AddCommand(newAttachACLCmd(stdio))
	return cmd
}

// attachChecks are the checks of dss attach's own settings beyond their
// type.
var attachChecks = map[string]func(string) string{
	"session-expiry": func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && (d < 0 || d%time.Second != 0) {
			return "want whole seconds, 0 or more, such as 1m"
		}
		return ""
	},
	"keepalive": func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && (d < time.Second || d > 65535*time.Second || d%time.Second != 0) {
			return "want whole seconds from 1s to 18h12m15s, such as 30s"
		}
		return ""
	},
}

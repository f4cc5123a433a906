package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/bench"
)

func newBenchCmd(stdio Stdio) *cobra.Command {
	var (
		cfg        bench.Config
		op         string
		noPreload  bool
		respQoS    int
		jsonOutput bool
		sec        securityFlags
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a state store server and report throughput and latency",
		Long: `Load-test any server that speaks the state store protocol over MQTT 5.

Each of --clients connections keeps --inflight requests outstanding and
sends the next one as soon as a response comes back. Every response is
validated (correlation data, __stat, payload shape, __ts); invalid ones
count as errors. Throughput and latency percentiles cover the --duration
window after --warmup.

Operations (--op):
  set, get, del, vdel   one verb on random keys of the key space
  mix:R                 GETs with probability R, SETs otherwise (mix:0.8)
  keynotify             --watchers connections watch one key; a writer SETs
                        it, one SET at a time, and the report gives the time
                        until all watchers (and each one) got the notification
  keynotify:pattern     the same, the watchers registered for a pattern
                        (KEYNOTIFY <prefix>notify* PATTERN)
  watch                 --watchers connections each watch a key of their own
                        (<prefix>watch/<i>/k); --clients writers SET those
                        keys, and the report gives the time from a SET to its
                        notification and the notifications per second
  watch:pattern         the same, each watcher registered for a pattern of
                        its own (KEYNOTIFY <prefix>watch/<i>/* PATTERN)
  pubsub                ordinary MQTT messages: --clients publishers on
                        --server, each keeping --inflight messages on their
                        way to the first subscriber, and --subscribers on
                        --sub-server (another node of a cluster; default
                        --server) that each receive every message, with
                        --qos 0 or 1; the report gives the messages per
                        second, the time from a publish to its receipt, and
                        the CPU per message of both servers (--server-pid,
                        --sub-server-pid)
  fill                  store every key once, then stop
  idle                  hold --clients idle connections for --duration (keep
                        alive 60 s, a PINGREQ every 30 s)

get, mix, del and vdel first store every key (unless --no-preload), so that
reads find a value of --value-size bytes.

With --server-pid the report includes the server's CPU time per request
and its resident memory, read from /proc: run it on the server's machine.
Against a server that authenticates, give --username and --password (or
DSS_PASSWORD), and --tls with --ca for its TLS listener: the connections'
client ids start with --client-id, which a policy must grant.

The exit status is 1 when any request failed validation or timed out.`,
		Example: `  dss bench --op set --clients 64 --duration 10s
  dss bench --op mix:0.8 --inflight 4 --json
  dss bench --op keynotify --watchers 1000
  dss bench --op watch:pattern --watchers 1000 --clients 16
  dss bench --op pubsub --qos 1 --clients 64 --subscribers 100 --server n1:1883 --sub-server n2:1883
  taskset -c 1 dss bench --op get --server-pid "$(pidof dss)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			w, err := bench.ParseWorkload(op)
			if err != nil {
				return err
			}
			cfg.Workload = w
			if cfg.TLS, err = sec.tlsConfig(); err != nil {
				return err
			}
			cfg.Username, cfg.Password = sec.username, sec.passwordBytes()
			if cmd.Flags().Changed("no-preload") || noPreload {
				preload := !noPreload
				cfg.Preload = &preload
			}
			switch respQoS {
			case 0:
				cfg.ResponseQoS0 = true
			case 1:
			default:
				return fmt.Errorf("--response-qos %d: want 0 or 1", respQoS)
			}
			if cfg.Warmup == 0 {
				cfg.Warmup = -1 // the flag's 0 means none; the config's means the default
			}
			rep, err := bench.Run(cmd.Context(), cfg, stdio.Err)
			if err != nil {
				return err
			}
			if jsonOutput {
				err = rep.WriteJSON(stdio.Out)
			} else {
				err = rep.WriteText(stdio.Out)
			}
			if err != nil {
				return err
			}
			if rep.Errors > 0 || rep.Timeouts > 0 {
				return &exitError{code: ExitFalse, err: fmt.Errorf("%d requests failed and %d timed out", rep.Errors, rep.Timeouts), quiet: true}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Server, "server", "localhost:1883", "MQTT address of the server (HOST:PORT)")
	f.IntVar(&cfg.Clients, "clients", 64, "number of connections")
	f.IntVar(&cfg.Inflight, "inflight", 1, "outstanding requests per connection")
	durationFlag(f, &cfg.Duration, "duration", 10*time.Second, "measured window (idle: how long to hold the connections)")
	f.Int64Var(&cfg.Requests, "requests", 0, "stop after this many requests (keynotify: notifications) instead of after --duration, and measure them all")
	durationFlag(f, &cfg.Warmup, "warmup", 2*time.Second, "unmeasured run before the window")
	f.StringVar(&op, "op", "set", "operation: set, get, mix:R, del, vdel, keynotify, keynotify:pattern, watch, watch:pattern, pubsub, fill or idle")
	f.IntVar(&cfg.Keys, "keys", 10000, "size of the key space")
	f.StringVar(&cfg.KeyPrefix, "key-prefix", "bench:", "prefix of every key")
	sizeFlag(f, &cfg.ValueSize, "value-size", 100, "size of every value, such as 100 or 4KiB")
	durationFlag(f, &cfg.PX, "px", 0, "give every SET this time to live (PX); 0 for none")
	f.IntVar(&cfg.Watchers, "watchers", 1000, "watching connections of --op keynotify and watch")
	f.IntVar(&cfg.Subscribers, "subscribers", 1, "subscribing connections of --op pubsub, each receiving every message")
	f.Uint8Var(&cfg.QoS, "qos", 0, "QoS of the messages and subscriptions of --op pubsub: 0 or 1")
	f.StringVar(&cfg.SubServer, "sub-server", "", "HOST:PORT the subscribers of --op pubsub connect to (another node of a cluster); default --server")
	f.IntVar(&cfg.SubServerPID, "sub-server-pid", 0, "process id of the subscribers' server of --op pubsub, to report its CPU time per message")
	durationFlag(f, &cfg.Timeout, "timeout", 5*time.Second, "time after which a request (or notification) counts as timed out")
	durationFlag(f, &cfg.ConnectTimeout, "connect-timeout", 10*time.Second, "time each connection may take to connect and subscribe")
	f.BoolVar(&noPreload, "no-preload", false, "do not store every key before a get, mix, del or vdel run")
	f.IntVar(&respQoS, "response-qos", 1, "QoS of the response subscription (0 or 1)")
	f.IntVar(&cfg.ServerPID, "server-pid", 0, "process id of the server, to report its CPU time per request and its memory")
	f.StringVar(&cfg.ClientID, "client-id", "", "prefix of the MQTT client ids (default bench-<pid>)")
	f.BoolVar(&jsonOutput, "json", false, "print the report as JSON")
	sec.add(f)
	return cmd
}

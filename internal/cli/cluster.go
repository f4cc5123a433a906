package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/server"
)

// secretEnv holds the cluster secret itself; --cluster-secret-file names a
// file that holds it. A secret is never a flag: command lines are visible
// to every user of the machine.
const secretEnv = "DSS_CLUSTER_SECRET"

// clusterFlags are the flags of dss serve that make a node a cluster
// member.
type clusterFlags struct {
	listen     string
	peers      string
	secretFile string
	// Raft's snapshot schedule, for tests that need snapshots soon.
	snapThreshold uint64
	snapInterval  time.Duration
	trailingLogs  uint64
}

func (c *clusterFlags) add(f *pflag.FlagSet) {
	f.StringVar(&c.listen, "cluster-listen", "", "cluster listener HOST:PORT for Raft and the requests other nodes forward; empty: a single node")
	f.StringVar(&c.peers, "peers", "", "initial cluster members ID=HOST:PORT,ID=HOST:PORT,... (their --cluster-listen addresses; the same list on every node)")
	f.StringVar(&c.secretFile, "cluster-secret-file", "", "file holding the cluster secret (or set "+secretEnv+"); required unless --cluster-listen is a loopback address")
	f.Uint64Var(&c.snapThreshold, "cluster-snapshot-threshold", 0, "Raft log entries that make a snapshot due (0: 8192)")
	f.DurationVar(&c.snapInterval, "cluster-snapshot-interval", 0, "how often Raft checks whether a snapshot is due (0: 10s)")
	f.Uint64Var(&c.trailingLogs, "cluster-trailing-logs", 0, "Raft log entries a snapshot leaves in the log (0: 10240)")
	for _, name := range []string{"cluster-snapshot-threshold", "cluster-snapshot-interval", "cluster-trailing-logs"} {
		_ = f.MarkHidden(name)
	}
}

// apply puts the cluster settings into cfg.
func (c *clusterFlags) apply(cfg *server.Config) error {
	if c.listen == "" {
		if c.peers != "" {
			return fmt.Errorf("--peers needs --cluster-listen")
		}
		return nil
	}
	if c.peers == "" {
		return fmt.Errorf("--cluster-listen needs --peers ID=HOST:PORT,... (the initial members, the same list on every node)")
	}
	peers, err := cluster.ParsePeers(c.peers)
	if err != nil {
		return fmt.Errorf("--peers: %w", err)
	}
	secret, err := readSecret(c.secretFile)
	if err != nil {
		return err
	}
	cfg.Cluster = server.ClusterConfig{
		Listen: c.listen, Peers: peers, Secret: secret,
		SnapshotThreshold: c.snapThreshold, SnapshotInterval: c.snapInterval, TrailingLogs: c.trailingLogs,
	}
	return nil
}

// readSecret returns the cluster secret from the file, or else from the
// environment; nil when neither is set.
func readSecret(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--cluster-secret-file: %w", err)
		}
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if s, ok := os.LookupEnv(secretEnv); ok {
		return []byte(strings.TrimSpace(s)), nil
	}
	return nil, nil
}

func newClusterCmd(stdio Stdio) *cobra.Command {
	var addr, secretFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show and change the members of a dss cluster",
		Long: `Show and change the members of a dss cluster through the cluster listener
of any member (--cluster-addr, a node's --cluster-listen address). The
connection is authenticated with the cluster secret, like the nodes'
own (` + secretEnv + ` or --cluster-secret-file).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&addr, "cluster-addr", "127.0.0.1:7946", "cluster listener HOST:PORT of any member")
	pf.StringVar(&secretFile, "cluster-secret-file", "", "file holding the cluster secret (or set "+secretEnv+")")
	pf.DurationVar(&timeout, "timeout", 15*time.Second, "how long to wait for the cluster")
	run := func(cmd *cobra.Command, do func(context.Context, *cluster.Admin) error) error {
		if err := bindEnv(cmd); err != nil {
			return err
		}
		secret, err := readSecret(secretFile)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		a, err := cluster.DialAdmin(ctx, addr, secret)
		if err != nil {
			return err
		}
		defer a.Close()
		if err := do(ctx, a); err != nil {
			if len(secret) == 0 && closedUnanswered(err) {
				// Without a secret the connection is plain TCP, which a
				// node that has a secret closes at once.
				return fmt.Errorf("cluster: %s closed the connection without an answer: a cluster with a secret answers only its holders (set %s or --cluster-secret-file): %w", addr, secretEnv, err)
			}
			return err
		}
		return nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Print the members, the leader, the term, the commit and applied indexes and each member's lag",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, func(ctx context.Context, a *cluster.Admin) error {
				st, err := a.Status(ctx)
				if err != nil {
					return err
				}
				printStatus(stdio, st)
				return nil
			})
		},
	}, &cobra.Command{
		Use:   "add ID HOST:PORT",
		Short: "Add a voting member: the node with id ID whose --cluster-listen is HOST:PORT",
		Long: `Add a voting member. Start the new node first, with its own --node-id,
--cluster-listen, --data and the cluster's --peers list (which does not name
it, so that it waits to be added instead of starting a cluster of its own);
then add it here. It catches up from the leader (by snapshot when it is far
behind) and votes from then on.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, func(ctx context.Context, a *cluster.Admin) error {
				if err := a.AddVoter(ctx, args[0], args[1]); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Out, "added %s at %s\n", args[0], args[1])
				return nil
			})
		},
	}, &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a member from the cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, func(ctx context.Context, a *cluster.Admin) error {
				if err := a.RemoveServer(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Out, "removed %s\n", args[0])
				return nil
			})
		},
	})
	return cmd
}

// closedUnanswered reports whether err is a cluster connection that the
// node closed before it answered.
func closedUnanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, rpc.ErrShutdown)
}

func printStatus(stdio Stdio, st cluster.Status) {
	leader := st.Leader
	if leader == "" {
		leader = "(none)"
	}
	fmt.Fprintf(stdio.Out, "leader: %s  term: %d  commit index: %d\n\n", leader, st.Term, st.CommitIndex)
	w := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tADDRESS\tSTATE\tTERM\tLAST INDEX\tCOMMIT\tAPPLIED\tLAG")
	for _, m := range st.Members {
		if m.Err != "" {
			fmt.Fprintf(w, "%s\t%s\tunreachable: %s\t\t\t\t\t\n", m.ID, m.Addr, m.Err)
			continue
		}
		l := m.Local
		state := l.State
		if !m.Voter {
			state += " (non-voter)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", m.ID, m.Addr, state, l.Term, l.LastIndex, l.CommitIndex, l.AppliedIndex, m.Lag)
	}
	w.Flush()
}

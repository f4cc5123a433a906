package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/cluster"
)

// verdictTimeout bounds the second look that tells, after a membership
// change timed out, whether it took effect.
const verdictTimeout = 5 * time.Second

func newClusterCmd(stdio Stdio) *cobra.Command {
	var (
		addr, secretFile string
		timeout          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show and change the members of a dss cluster",
		Long: `Show and change the members of a dss cluster through the cluster listener
of any member (--cluster-addr, a node's --cluster-listen address; not its
MQTT or HTTP port). The connection is authenticated with the cluster
secret, like the nodes' own (` + secretEnv + ` or --cluster-secret-file).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&addr, "cluster-addr", "127.0.0.1:7946", "cluster listener HOST:PORT of any member (its --cluster-listen)")
	pf.StringVar(&secretFile, "cluster-secret-file", "", "file holding the cluster secret (or set "+secretEnv+")")
	durationFlag(pf, &timeout, "timeout", 15*time.Second, "how long to wait for the cluster")
	dial := func(ctx context.Context) (*cluster.Admin, []byte, error) {
		secret, err := readSecret(secretFile)
		if err != nil {
			return nil, nil, err
		}
		a, err := cluster.DialAdmin(ctx, addr, secret)
		return a, secret, err
	}
	run := func(cmd *cobra.Command, do func(context.Context, *cluster.Admin) error) error {
		if err := bindEnv(cmd); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		a, secret, err := dial(ctx)
		if err != nil {
			return err
		}
		defer a.Close()
		if err := do(ctx, a); err != nil {
			if len(secret) == 0 && closedUnanswered(err) {
				// Without a secret the connection is plain TCP, which a
				// node that has a secret closes at once.
				return fmt.Errorf("cluster: %s closed the connection without an answer: a cluster with a secret answers only its holders (set %s or --cluster-secret-file), and only on its --cluster-listen address: %w", addr, secretEnv, err)
			}
			return err
		}
		return nil
	}
	// verdict explains a membership change that ran out of time: a second
	// look at the configuration says whether it took effect.
	verdict := func(cmd *cobra.Command, err error, what, id string, wantMember bool) error {
		if !errors.Is(err, context.DeadlineExceeded) || cmd.Context().Err() != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), verdictTimeout)
		defer cancel()
		a, _, derr := dial(ctx)
		if derr == nil {
			defer a.Close()
			var st cluster.Status
			if st, derr = a.Status(ctx); derr == nil {
				member := slices.ContainsFunc(st.Members, func(m cluster.MemberStatus) bool { return m.ID == id })
				if member == wantMember {
					return fmt.Errorf("%s: no answer within --timeout %v, but the change took effect: %s's configuration %s %s (check with dss cluster status)", what, timeout, st.Self, map[bool]string{true: "lists", false: "no longer lists"}[wantMember], id)
				}
				return fmt.Errorf("%s: no answer within --timeout %v, and the change has not taken effect: %s's configuration %s %s; it may still take effect if the leader logged it (check with dss cluster status before trying again)", what, timeout, st.Self, map[bool]string{true: "does not list", false: "still lists"}[wantMember], id)
			}
		}
		return fmt.Errorf("%s: no answer within --timeout %v, and whether the change took effect is unknown (the cluster's configuration could not be read: %v); check with dss cluster status", what, timeout, derr)
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Print the members, the leader, the term, the commit and applied indexes and each member's lag",
		Long: `Print the leader, the term and the commit index, and for each member its
address, state, term, last log index, commit and applied index and lag, as
the node at --cluster-addr sees them. With --json, one object:
{"node":..., "member":..., "leader":..., "term":..., "commit_index":...,
"members":[{"id":..., "address":..., "voter":..., "state":..., "term":...,
"last_index":..., "commit_index":..., "applied_index":..., "lag":...,
"error":...}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, func(ctx context.Context, a *cluster.Admin) error {
				st, err := a.Status(ctx)
				if err != nil {
					return err
				}
				if asJSON {
					return statusJSON(st).write(stdio.Out)
				}
				printStatus(stdio.Out, st)
				return nil
			})
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	var forceAdd, forceRemove bool
	add := &cobra.Command{
		Use:   "add ID HOST:PORT",
		Short: "Add a voting member: the node with id ID whose --cluster-listen is HOST:PORT",
		Long: `Add a voting member. Start the new node first, with its own --node-id,
--cluster-listen, --data and the cluster's --peers list (which does not name
it, so that it waits to be added instead of starting a cluster of its own);
then add it here. It catches up from the leader (by snapshot when it is far
behind) and votes from then on.

The leader refuses the change, and says why, unless the new node answers at
HOST:PORT as ID and a majority of the voters (the new one included) would
answer after it: adding a node that is not running to a cluster that has a
node down would leave it without a majority. --force skips the check.

When no answer comes within --timeout, dss looks at the configuration again
and says whether the change took effect.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, func(ctx context.Context, a *cluster.Admin) error {
				if err := a.AddVoter(ctx, args[0], args[1], forceAdd); err != nil {
					return verdict(cmd, fmt.Errorf("cluster add %s: %w", args[0], err), "cluster add "+args[0], args[0], true)
				}
				fmt.Fprintf(stdio.Out, "added %s at %s\n", args[0], args[1])
				return nil
			})
		},
	}
	add.Flags().BoolVar(&forceAdd, "force", false, "add the member even if it does not answer or the cluster would lose its majority")
	remove := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a member from the cluster",
		Long: `Remove a member. The leader refuses the change, and says why, unless ID is a
member and a majority of the voters left would answer: removing a running
node from a cluster that has another node down would leave it without a
majority. Removing the node that is down is what repairs such a cluster.
--force skips the check.

When no answer comes within --timeout, dss looks at the configuration again
and says whether the change took effect.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, func(ctx context.Context, a *cluster.Admin) error {
				if err := a.RemoveServer(ctx, args[0], forceRemove); err != nil {
					return verdict(cmd, fmt.Errorf("cluster remove %s: %w", args[0], err), "cluster remove "+args[0], args[0], false)
				}
				fmt.Fprintf(stdio.Out, "removed %s\n", args[0])
				return nil
			})
		},
	}
	remove.Flags().BoolVar(&forceRemove, "force", false, "remove the member even if the cluster would lose its majority")
	cmd.AddCommand(status, add, remove)
	return cmd
}

// closedUnanswered reports whether err is a cluster connection that the
// node closed before it answered.
func closedUnanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, rpc.ErrShutdown)
}

func printStatus(w io.Writer, st cluster.Status) {
	leader := st.Leader
	switch {
	case leader == "" && st.ClaimedLeader != "":
		leader = fmt.Sprintf("(none known to %s; %s reports that it leads)", st.Self, st.ClaimedLeader)
	case leader == "":
		leader = "(none)"
	}
	if st.NotMember {
		fmt.Fprintf(w, "%s is not a member of the cluster (it was removed, or has not been added yet); the members below are those it last knew\n", st.Self)
	}
	fmt.Fprintf(w, "leader: %s  term: %d  commit index: %d\n\n", leader, st.Term, st.CommitIndex)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tTERM\tLAST INDEX\tCOMMIT\tAPPLIED\tLAG\tMESSAGES\tROUTES")
	for _, m := range st.Members {
		msgs := messagesState(st, m)
		if m.Err != "" {
			fmt.Fprintf(tw, "%s\t%s\tunreachable: %s\t\t\t\t\t\t%s\t%d\n", m.ID, m.Addr, m.Err, msgs, m.Routes)
			continue
		}
		l := m.Local
		state := l.State
		if !m.Voter {
			state += " (non-voter)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\n", m.ID, m.Addr, state, l.Term, l.LastIndex, l.CommitIndex, l.AppliedIndex, m.Lag, msgs, m.Routes)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nretained messages: %d  client ids: %d  (MESSAGES: how %s reaches each member with MQTT messages)\n", st.Retained, st.ClientIDs, st.Self)
	for _, m := range st.Members {
		if m.Messages == "down" && m.MessagesErr != "" {
			fmt.Fprintf(w, "%s: messages to %s fail: %s\n", st.Self, m.ID, m.MessagesErr)
		}
	}
}

// messagesState is how the node asked reaches member m with messages.
func messagesState(st cluster.Status, m cluster.MemberStatus) string {
	switch {
	case m.ID == st.Self:
		return "(self)"
	case m.Messages == "down" && !m.MessagesSince.IsZero():
		s := "down " + time.Since(m.MessagesSince).Round(time.Second).String()
		if m.Buffered > 0 {
			s += fmt.Sprintf(", %d buffered", m.Buffered)
		}
		return s
	}
	return m.Messages
}

// statusJSON is the --json form of a status.
func statusJSON(st cluster.Status) jsonObject {
	members := make([]map[string]any, 0, len(st.Members))
	for _, m := range st.Members {
		o := map[string]any{"id": m.ID, "address": m.Addr, "voter": m.Voter}
		if m.Err != "" {
			o["error"] = m.Err
		} else {
			l := m.Local
			o["state"], o["term"], o["last_index"] = l.State, l.Term, l.LastIndex
			o["commit_index"], o["applied_index"], o["lag"] = l.CommitIndex, l.AppliedIndex, m.Lag
		}
		o["routes"] = m.Routes
		if m.ID != st.Self {
			o["messages"], o["messages_buffered"] = m.Messages, m.Buffered
			if !m.MessagesSince.IsZero() {
				o["messages_since"] = m.MessagesSince.UTC().Format(time.RFC3339)
			}
			if m.MessagesErr != "" {
				o["messages_error"] = m.MessagesErr
			}
		}
		members = append(members, o)
	}
	o := jsonObject{
		"node": st.Self, "member": !st.NotMember, "leader": st.Leader,
		"term": st.Term, "commit_index": st.CommitIndex, "members": members,
		"retained_messages": st.Retained, "client_ids": st.ClientIDs,
	}
	if st.ClaimedLeader != "" {
		o["claimed_leader"] = st.ClaimedLeader
	}
	return o
}

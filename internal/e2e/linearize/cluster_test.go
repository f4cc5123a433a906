package linearize

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// cluster is three dss nodes whose peer traffic goes through a network of
// proxies.
type cluster struct {
	ns        []*node
	net       *network
	peerAddrs map[string]string // cluster listeners by node id
}

// startCluster starts size nodes with --fsync always, each reaching its
// peers through its own proxies, and waits until every node serves.
func startCluster(t *testing.T, bin, name string, size int) *cluster {
	t.Helper()
	ids := make([]string, size)
	peerAddrs := map[string]string{}
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
		peerAddrs[ids[i]] = freeAddr(t)
	}
	net, err := newNetwork(peerAddrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(net.close)
	c := &cluster{net: net, peerAddrs: peerAddrs}
	for _, id := range ids {
		c.ns = append(c.ns, newNode(t, bin, id, freeAddr(t), logPath(name, id),
			"--node-id", id,
			"--cluster-listen", peerAddrs[id],
			"--peers", net.peers(id, peerAddrs),
			"--data", t.TempDir(),
			"--fsync", "always",
			// Snapshots every few seconds under the load, and a short
			// log behind them: a node that was down a while catches up
			// from a snapshot, and restarts restore one.
			"--cluster-snapshot-threshold", "512",
			"--cluster-snapshot-interval", "1s",
			"--cluster-trailing-logs", "128"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := startAll(ctx, c.ns...); err != nil {
		t.Fatal(err)
	}
	if err := c.healthy(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// startAll starts the nodes at once: a node may wait for the others
// before it listens.
func startAll(ctx context.Context, ns ...*node) error {
	var wg sync.WaitGroup
	errs := make([]error, len(ns))
	for i, n := range ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.start(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *cluster) nodes() []*node { return c.ns }

// servers puts worker i's own node first, then the others, to fail over
// to.
func (c *cluster) servers(i int) []string {
	var list []string
	for j := range c.ns {
		list = append(list, c.ns[(i+j)%len(c.ns)].addr)
	}
	return list
}

func (c *cluster) healthy(ctx context.Context) error {
	for _, n := range c.ns {
		if err := serves(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// leader asks the running nodes which node leads, through `dss cluster
// status`, until they agree or ctx ends.
func (c *cluster) leader(ctx context.Context) (*node, error) {
	var last error
	for {
		var seen *node
		agree := true
		for _, n := range c.ns {
			if up, _ := n.running(); !up {
				continue
			}
			l, err := c.leaderSeenBy(ctx, n)
			switch {
			case err != nil:
				last, agree = err, false
			case seen == nil:
				seen = l
			case seen != l:
				last, agree = fmt.Errorf("%s and %s both named leader", seen.id, l.id), false
			}
		}
		if agree && seen != nil {
			return seen, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no leader: %w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaderSeenBy runs `dss cluster status` against n's cluster listener and
// reads the leader's id from its first line ("leader: ID ...").
func (c *cluster) leaderSeenBy(ctx context.Context, n *node) (*node, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, dssBinary, "cluster", "status", "--cluster-addr", c.peerAddrs[n.id], "--timeout", "2s").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("dss cluster status --cluster-addr %s: %w: %s", c.peerAddrs[n.id], err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if f := strings.Fields(first); len(f) >= 2 && f[0] == "leader:" {
		for _, m := range c.ns {
			if m.id == f[1] {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("dss cluster status --cluster-addr %s names no leader:\n%s", c.peerAddrs[n.id], out)
}

// follower returns a node that is not the leader.
func (c *cluster) follower(ctx context.Context, r *rand.Rand) (*node, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	var fs []*node
	for _, n := range c.ns {
		if n != l {
			fs = append(fs, n)
		}
	}
	return fs[r.IntN(len(fs))], nil
}

// target picks the node a fault hits: the leader, or a follower.
type target func(ctx context.Context, c *cluster, r *rand.Rand) (*node, error)

func theLeader(ctx context.Context, c *cluster, _ *rand.Rand) (*node, error) { return c.leader(ctx) }
func aFollower(ctx context.Context, c *cluster, r *rand.Rand) (*node, error) {
	return c.follower(ctx, r)
}

// clusterFaults are the faults of a cluster round, each against the leader
// and against a follower.
func clusterFaults(c *cluster) []fault {
	var fs []fault
	on := func(kind string, pick target, inject func(ctx context.Context, n *node, r *rand.Rand) (string, func(context.Context) error, error)) {
		fs = append(fs, fault{kind: kind, inject: func(ctx context.Context, r *rand.Rand) (string, func(context.Context) error, error) {
			n, err := pick(ctx, c, r)
			if err != nil {
				return "", nil, err
			}
			return inject(ctx, n, r)
		}})
	}
	kill := func(_ context.Context, n *node, _ *rand.Rand) (string, func(context.Context) error, error) {
		return killRestart(n)
	}
	stop := func(_ context.Context, n *node, _ *rand.Rand) (string, func(context.Context) error, error) {
		return pause(n)
	}
	healNet := func(r *rand.Rand) func(context.Context) error {
		reset := r.IntN(2) == 0
		return func(context.Context) error {
			c.net.heal(reset)
			return nil
		}
	}
	isolate := func(_ context.Context, n *node, r *rand.Rand) (string, func(context.Context) error, error) {
		return c.net.isolate(n.id), healNet(r), nil
	}
	silence := func(_ context.Context, n *node, r *rand.Rand) (string, func(context.Context) error, error) {
		return c.net.silence(n.id), healNet(r), nil
	}
	slow := func(_ context.Context, n *node, r *rand.Rand) (string, func(context.Context) error, error) {
		return c.net.slow(n.id, time.Duration(20+r.IntN(280))*time.Millisecond), healNet(r), nil
	}
	on("kill-leader", theLeader, kill)
	on("partition-leader", theLeader, isolate)
	on("pause-leader", theLeader, stop)
	on("kill-follower", aFollower, kill)
	on("one-way-leader", theLeader, silence)
	on("partition-follower", aFollower, isolate)
	on("pause-follower", aFollower, stop)
	on("delay-leader", theLeader, slow)
	on("one-way-follower", aFollower, silence)
	fs = append(fs, fault{kind: "kill-majority", inject: func(ctx context.Context, r *rand.Rand) (string, func(context.Context) error, error) {
		l, err := c.leader(ctx)
		if err != nil {
			return "", nil, err
		}
		f, err := c.follower(ctx, r)
		if err != nil {
			return "", nil, err
		}
		l.kill()
		f.kill()
		return fmt.Sprintf("SIGKILL %s and %s, restart", l.id, f.id), func(ctx context.Context) error {
			return startAll(ctx, l, f)
		}, nil
	}})
	fs = append(fs, fault{kind: "kill-all", inject: func(context.Context, *rand.Rand) (string, func(context.Context) error, error) {
		var ids []string
		for _, n := range c.ns {
			n.kill()
			ids = append(ids, n.id)
		}
		return fmt.Sprintf("SIGKILL %s, restart", strings.Join(ids, ", ")), func(ctx context.Context) error {
			return startAll(ctx, c.ns...)
		}, nil
	}})
	return fs
}

// TestCluster runs the load against three nodes, through all of them,
// while the leader and the followers are killed, paused, partitioned, cut
// off one way and slowed down, and two or all three are killed at once.
func TestCluster(t *testing.T) {
	if clusterSupport != "" {
		t.Skipf("not a cluster: %s", clusterSupport)
	}
	if err := os.MkdirAll(*flagOut, 0o755); err != nil {
		t.Fatal(err)
	}
	p := clusterPlan(t, "cluster")
	c := startCluster(t, dssBinary, fmt.Sprintf("cluster-seed%d", p.seed), 3)
	p.faults = clusterFaults(c)
	p.rounds = rounds(len(p.faults), 300)
	if testing.Short() {
		p.rounds = 2
	}
	run(t, c, p)
}

// TestClusterRaceBuild runs TestCluster's load and faults against nodes
// built with the race detector, which sees a data race a plain binary
// hides: two rounds in the normal suite, a hundred with DSS_LONG=1.
func TestClusterRaceBuild(t *testing.T) {
	if clusterSupport != "" {
		t.Skipf("not a cluster: %s", clusterSupport)
	}
	if *flagBin != "" {
		t.Skip("-linearize.bin names the binary: no race-detecting build of it")
	}
	if err := os.MkdirAll(*flagOut, 0o755); err != nil {
		t.Fatal(err)
	}
	p := clusterPlan(t, "cluster-race")
	c := startCluster(t, raceDSS(t), fmt.Sprintf("cluster-race-seed%d", p.seed), 3)
	p.faults = clusterFaults(c)
	p.rounds = rounds(2, 100)
	// A race-detecting build runs several times slower.
	p.timeout = 5 * time.Second
	run(t, c, p)
}

// clusterPlan is the load of the cluster tests: six clients, one per node
// and then round again (so four of them reach the store through a
// follower), each with three requests in flight on its connection.
func clusterPlan(t *testing.T, name string) plan {
	p := plan{
		name:    name,
		seed:    seed(t),
		workers: 6,
		lanes:   3,
		keys:    4,
		timeout: 2 * time.Second,
		warmup:  time.Second,
		after:   time.Second,
		check:   2 * time.Minute,
		hold:    func(r *rand.Rand) time.Duration { return time.Duration(500+r.IntN(2500)) * time.Millisecond },
	}
	if dsstest.Long() {
		p.check = 10 * time.Minute
	}
	return p
}

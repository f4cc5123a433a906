package linearize

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
)

// single is one dss node with --fsync always.
type single struct {
	n *node
}

func (s *single) servers(int) []string { return []string{s.n.addr} }
func (s *single) nodes() []*node       { return []*node{s.n} }

func (s *single) healthy(ctx context.Context) error {
	return serves(ctx, s.n)
}

// serves waits until n runs and a write through it succeeds.
func serves(ctx context.Context, n *node) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		up, err := n.running()
		if err != nil {
			return err
		}
		if up {
			if last = probe(ctx, n); last == nil {
				return nil
			}
		} else {
			last = fmt.Errorf("node %s: not running", n.id)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s does not serve: %w (log: %s)", n.id, last, n.log.Name())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// probe writes a key of its own through n.
func probe(ctx context.Context, n *node) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{
		Servers:        []string{n.addr},
		ClientID:       "lin-probe-" + n.id,
		ConnectTimeout: time.Second,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Set(ctx, "probe/"+n.id, []byte("ok"))
	return err
}

// killRestart is SIGKILL of a node and, healed, its restart on the same
// data.
func killRestart(n *node) (string, func(context.Context) error, error) {
	n.kill()
	return fmt.Sprintf("SIGKILL %s, restart", n.id), n.start, nil
}

// pause is SIGSTOP of a node until healed with SIGCONT.
func pause(n *node) (string, func(context.Context) error, error) {
	if err := n.signal(sigStop); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("SIGSTOP %s, SIGCONT", n.id), func(context.Context) error {
		return n.signal(sigCont)
	}, nil
}

// TestSingleNode runs the load against one node with --fsync always while
// it is killed with SIGKILL and restarted, or paused with SIGSTOP: every
// acknowledged write survives, and the history stays linearizable.
func TestSingleNode(t *testing.T) {
	if err := os.MkdirAll(*flagOut, 0o755); err != nil {
		t.Fatal(err)
	}
	p := plan{
		name:    "single",
		rounds:  rounds(3, 300),
		seed:    seed(t),
		workers: 6,
		keys:    4,
		timeout: time.Second,
		warmup:  time.Second,
		after:   time.Second,
		check:   2 * time.Minute,
	}
	if testing.Short() {
		p.rounds = 1
	}
	if dsstest.Long() {
		p.check = 10 * time.Minute
	}
	n := newNode(t, dssBinary, "n1", freeAddr(t), logPath(fmt.Sprintf("single-seed%d", p.seed), "n1"),
		"--node-id", "n1", "--data", t.TempDir(), "--fsync", "always",
		// Snapshots often, so that restarts replay a snapshot and a journal.
		"--snapshot-after", "65536")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.start(ctx); err != nil {
		t.Fatal(err)
	}
	p.hold = func(r *rand.Rand) time.Duration { return time.Duration(300+r.IntN(1700)) * time.Millisecond }
	p.faults = []fault{
		{kind: "kill", inject: func(context.Context, *rand.Rand) (string, func(context.Context) error, error) {
			return killRestart(n)
		}},
		{kind: "pause", inject: func(context.Context, *rand.Rand) (string, func(context.Context) error, error) {
			return pause(n)
		}},
	}
	run(t, &single{n: n}, p)
}

// TestCheckerCatchesLostWrites runs a node that keeps nothing on disk
// (--in-memory), so that a SIGKILL loses an acknowledged write: the
// harness, from the client to the checker, must report the history as not
// linearizable.
func TestCheckerCatchesLostWrites(t *testing.T) {
	n := newNode(t, dssBinary, "n1", freeAddr(t), logPath("lost-writes", "n1"), "--node-id", "n1", "--in-memory")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.start(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, client.Config{Servers: []string{n.addr}, MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := &worker{c: c, w: &workload{timeout: 10 * time.Second}, seen: map[string]string{}}
	h := newHistory()
	p := h.process()
	for _, in := range []input{{Verb: verbSet, Key: "k", Value: "a"}, {Verb: verbGet, Key: "k"}} {
		call := h.invoke(p, in, n.id)
		out, err := w.do(ctx, in)
		if err != nil || out.Result == unknown {
			t.Fatalf("%s: %v", describeOp(in, out), err)
		}
		call.complete(out)
	}
	n.kill()
	if err := n.start(ctx); err != nil {
		t.Fatal(err)
	}
	in := input{Verb: verbGet, Key: "k"}
	call := h.invoke(p, in, n.id)
	out, err := w.do(ctx, in)
	if err != nil || out.Result != missing {
		t.Fatalf("an in-memory node kept its data across SIGKILL: %s: %v", describeOp(in, out), err)
	}
	call.complete(out)
	v, err := h.check(time.Minute, t.TempDir(), "lost-writes")
	if err != nil {
		t.Fatal(err)
	}
	if v.result != porcupine.Illegal {
		t.Fatalf("the checker says %s of a history with a lost acknowledged write", v.result)
	}
}

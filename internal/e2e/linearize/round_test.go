package linearize

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
)

// system is the dss deployment under test: one node, or a cluster.
type system interface {
	// servers is the server list of worker i's client: its own node
	// first.
	servers(i int) []string
	// nodes are the processes.
	nodes() []*node
	// healthy waits until every node runs and serves a write.
	healthy(ctx context.Context) error
}

// fault is one kind of fault. inject starts it and returns what it did
// and the function that ends it.
type fault struct {
	kind   string
	inject func(ctx context.Context, r *rand.Rand) (what string, heal func(context.Context) error, err error)
}

// plan is how the rounds of a test run.
type plan struct {
	name    string
	rounds  int
	seed    uint64
	workers int
	// lanes is how many requests each worker's connection has in flight
	// at once: each lane is a process of its own in the history, all
	// sharing the worker's client. Zero means one.
	lanes   int
	keys    int
	timeout time.Duration // of one request
	warmup  time.Duration // load before the fault
	hold    func(r *rand.Rand) time.Duration
	after   time.Duration // load after the system is healthy again
	check   time.Duration // the checker's time limit per round
	faults  []fault
}

// tally sums up the rounds of a test.
type tally struct {
	rounds, ops, unknownWrites, unansweredReads, refused int
	faults                                               map[string]int
	violations, undecided                                int
}

func (s tally) String() string {
	kinds := make([]string, 0, len(s.faults))
	for k, n := range s.faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("rounds %d, operations %d (writes without response %d; left out: reads without response %d, requests refused unexecuted %d), faults: %s; violations %d, undecided %d",
		s.rounds, s.ops, s.unknownWrites, s.unansweredReads, s.refused, strings.Join(kinds, ", "), s.violations, s.undecided)
}

// rounds returns the number of rounds: the flag's, or short in the normal
// suite and long with DSS_LONG=1.
func rounds(short, long int) int {
	if *flagRounds > 0 {
		return *flagRounds
	}
	return dsstest.Rounds(short, long)
}

// run runs the plan's rounds against sys, one fault per round, the kinds
// in turn, and fails the test on a history that is not linearizable or
// not decided.
func run(t *testing.T, sys system, p plan) tally {
	s := tally{faults: map[string]int{}}
	// The summary is printed also when a round ends the test early.
	defer func() { t.Logf("%s: %s", p.name, s) }()
	for round := 0; round < p.rounds; round++ {
		r := rand.New(rand.NewPCG(p.seed, uint64(round)))
		f := p.faults[round%len(p.faults)]
		h, err := runRound(t, sys, p, round, f, r)
		s.rounds++
		s.faults[f.kind]++
		if err != nil {
			t.Fatalf("%s round %d (%s, seed %d): %v", p.name, round, f.kind, p.seed, err)
		}
		ops, unknownWrites, unanswered, refused := h.counts()
		s.ops += ops
		s.unknownWrites += unknownWrites
		s.unansweredReads += unanswered
		s.refused += refused
		name := fmt.Sprintf("%s-seed%d-round%d", p.name, p.seed, round)
		began := time.Now()
		v, err := h.check(p.check, *flagOut, name)
		took := time.Since(began).Round(time.Millisecond)
		if err != nil {
			t.Fatalf("%s round %d: %v", p.name, round, err)
		}
		switch v.result {
		case porcupine.Ok:
			t.Logf("round %d (%s): %d operations, %d writes without response: linearizable (checked in %v)", round, f.kind, ops, unknownWrites, took)
			continue
		case porcupine.Illegal:
			s.violations++
		default:
			s.undecided++
		}
		t.Errorf("%s round %d (%s, seed %d): the history is %s (%d operations); visualisation: %s\n%s",
			p.name, round, f.kind, p.seed, map[porcupine.CheckResult]string{porcupine.Illegal: "not linearizable", porcupine.Unknown: "undecided within " + p.check.String()}[v.result],
			ops, v.file, strings.Join(v.report, "\n"))
	}
	return s
}

// runRound runs the load on fresh keys, injects f while it runs, heals it,
// waits until the system is healthy, runs the load a while longer and
// returns the history.
func runRound(t *testing.T, sys system, p plan, round int, f fault, r *rand.Rand) (*history, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := sys.healthy(ctx); err != nil {
		return nil, fmt.Errorf("before the fault: %w", err)
	}
	h := newHistory()
	w := &workload{timeout: p.timeout, names: map[string]string{}}
	for _, n := range sys.nodes() {
		w.names[n.addr] = n.id
	}
	for k := 0; k < p.keys; k++ {
		w.keys = append(w.keys, fmt.Sprintf("r%d/k%d", round, k))
	}
	var clients []*client.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i < p.workers; i++ {
		c, err := client.Dial(ctx, client.Config{
			Servers:        sys.servers(i),
			ClientID:       fmt.Sprintf("lin-r%d-w%d", round, i),
			KeepAlive:      2 * time.Second,
			ConnectTimeout: 2 * time.Second,
			MinBackoff:     20 * time.Millisecond,
			MaxBackoff:     500 * time.Millisecond,
			Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	load, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, p.workers)
	lanes := max(p.lanes, 1)
	errs = make(chan error, p.workers*lanes)
	for i, c := range clients {
		for lane := range lanes {
			id := i*lanes + lane
			wk := &worker{id: id, c: c, h: h, w: w, seen: map[string]string{},
				rng: rand.New(rand.NewPCG(r.Uint64(), uint64(id)))}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := wk.run(load); err != nil {
					errs <- err
					stop()
				}
			}()
		}
	}
	finish := func() error {
		stop()
		wg.Wait()
		close(errs)
		return <-errs
	}

	sleep(load, p.warmup)
	from := time.Now()
	what, heal, err := f.inject(ctx, r)
	if err != nil {
		finish()
		return nil, fmt.Errorf("injecting %s: %w", f.kind, err)
	}
	hold := p.hold(r)
	what = fmt.Sprintf("%s (held %v)", what, hold.Round(time.Millisecond))
	sleep(load, hold)
	if err := heal(ctx); err != nil {
		finish()
		return nil, fmt.Errorf("healing %s: %w", what, err)
	}
	h.fault(from, time.Now(), what)
	if err := sys.healthy(ctx); err != nil {
		finish()
		return nil, fmt.Errorf("after %s: %w", what, err)
	}
	sleep(load, p.after)
	if err := finish(); err != nil {
		return nil, err
	}
	t.Logf("round %d: %s", round, what)
	return h, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// logPath is where a node's output goes.
func logPath(p, id string) string {
	return filepath.Join(*flagOut, p+"-"+id+".log")
}

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// state is what a client knows of one key.
type state struct {
	exists  bool
	value   string
	version hlc.Timestamp // unknown (zero) for a state predicted for a request without response
	fenced  bool
	token   hlc.Timestamp
	px      int64     // the key's time to live when it was set; 0: none
	sentAt  time.Time // when the request that made this state was sent
}

// deadline bounds when the key expires: from the version when known,
// otherwise from when the request was sent.
func (s state) deadline() time.Time {
	if !s.version.IsZero() {
		return time.UnixMilli(s.version.Wall + s.px)
	}
	return s.sentAt.Add(time.Duration(s.px) * time.Millisecond)
}

// key is one key of the model; a single worker owns it.
type key struct {
	name      string
	ephemeral bool // written with a short PX only, never read back by the worker
	acked     state
	pending   *state // the state if the request without response took effect
}

type model struct {
	keys    [][]*key // by worker
	acked   atomic.Int64
	tokens  int // fencing tokens handed out
	tokenMu sync.Mutex
}

func newModel(workers, perWorker int) *model {
	m := &model{}
	for w := 0; w < workers; w++ {
		var ks []*key
		for i := 0; i < perWorker; i++ {
			ks = append(ks, &key{name: fmt.Sprintf("w%d/k%d", w, i), ephemeral: i == 0})
		}
		m.keys = append(m.keys, ks)
	}
	return m
}

func (m *model) newToken() hlc.Timestamp {
	m.tokenMu.Lock()
	defer m.tokenMu.Unlock()
	m.tokens++
	return hlc.Timestamp{Wall: time.Now().UnixMilli(), Counter: uint32(m.tokens), Node: "lock"}
}

// plan picks the next request for k and what it must answer and leave
// behind when it takes effect.
func (m *model) plan(r *rand.Rand, k *key, round, n int) (args []string, user []paho.UserProperty, want string, next state) {
	a := k.acked
	value := fmt.Sprintf("r%d-%d-%s", round, n, string(rune('a'+r.IntN(26))))
	next = state{sentAt: time.Now()}
	if k.ephemeral {
		px := 300 + r.IntN(1500)
		next = state{exists: true, value: value, px: int64(px), sentAt: next.sentAt}
		return []string{"SET", k.name, value, "PX", strconv.Itoa(px)}, []paho.UserProperty{now()}, "+OK\r\n", next
	}
	var ft []paho.UserProperty
	if a.exists && a.fenced {
		ft = []paho.UserProperty{fence(a.token)}
	}
	switch op := r.IntN(10); {
	case op < 5 || !a.exists: // SET, maybe protecting the key or renewing its token
		next = state{exists: true, value: value, fenced: a.exists && a.fenced, token: a.token, sentAt: next.sentAt}
		if !a.exists {
			next.fenced, next.token = false, hlc.Timestamp{}
		}
		if r.IntN(4) == 0 {
			t := m.newToken()
			ft = []paho.UserProperty{fence(t)}
			next.fenced, next.token = true, t
		}
		if r.IntN(3) == 0 {
			next.px = 3_600_000
			return []string{"SET", k.name, value, "PX", "3600000"}, append(ft, now()), "+OK\r\n", next
		}
		return []string{"SET", k.name, value}, append(ft, now()), "+OK\r\n", next
	case op < 7:
		return []string{"DEL", k.name}, ft, ":1\r\n", state{sentAt: next.sentAt}
	case op < 9:
		return []string{"VDEL", k.name, a.value}, ft, ":1\r\n", state{sentAt: next.sentAt}
	default: // a SET NX that must not apply: it changes nothing
		return []string{"SET", k.name, value, "NX"}, append(ft, now()), ":-1\r\n", a
	}
}

// work runs requests on the worker's keys until the connection is lost.
// With graceful set, a request that the server accepted must be answered.
func (m *model) work(t *testing.T, ctx context.Context, addr string, w, round int, seed uint64, graceful bool) {
	c, err := dial(ctx, addr, fmt.Sprintf("worker-%d", w))
	if err != nil {
		return // the server died before we got going
	}
	defer c.close()
	r := rand.New(rand.NewPCG(seed, uint64(w)))
	for n := 0; ctx.Err() == nil; n++ {
		k := m.keys[w][r.IntN(len(m.keys[w]))]
		args, user, want, next := m.plan(r, k, round, n)
		k.pending = &next
		rep, err := c.do(ctx, args, user...)
		if errors.Is(err, errRefused) {
			k.pending = nil
			continue
		}
		if err != nil {
			if graceful && errors.Is(err, errUnanswered) && ctx.Err() == nil {
				t.Errorf("%v on %s: %v during a graceful shutdown", args[0], k.name, err)
			}
			return // unknown outcome: the pending state stays
		}
		if rep.payload != want {
			t.Errorf("%v on %s answered %q, want %q", args[0], k.name, rep.payload, want)
			return
		}
		if want == ":-1\r\n" {
			k.pending = nil // nothing changed
			continue
		}
		if next.exists {
			v, err := hlc.Parse(rep.version)
			if err != nil {
				t.Errorf("%v on %s: version %q: %v", args[0], k.name, rep.version, err)
				return
			}
			next.version = v
		}
		k.acked, k.pending = next, nil
		m.acked.Add(1)
	}
}

// verify reads every key back after a restart and checks it against what
// was acknowledged (or the one request whose answer was lost).
func (m *model) verify(t *testing.T, p *process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dial(ctx, p.addr, "verifier")
	if err != nil {
		t.Fatalf("verifier: %v; server output:\n%s", err, p.out)
	}
	defer c.close()
	do := func(args []string, user ...paho.UserProperty) reply {
		r, err := c.do(ctx, args, user...)
		if err != nil {
			t.Fatalf("verifier %v: %v; server output:\n%s", args, err, p.out)
		}
		return r
	}
	const margin = 150 * time.Millisecond
	for _, ks := range m.keys {
		for _, k := range ks {
			got := do([]string{"GET", k.name})
			at := time.Now()
			candidates := []state{k.acked}
			if k.pending != nil {
				candidates = append(candidates, *k.pending)
			}
			var match *state
			for i, cand := range candidates {
				pending := i == 1
				surelyExpired := cand.exists && cand.px > 0 && !cand.deadline().After(at.Add(-margin))
				surelyLive := cand.exists && (cand.px == 0 || cand.deadline().After(at.Add(margin)))
				switch {
				case got.payload == "$-1\r\n" && (!cand.exists || !surelyLive):
					match = &state{}
				case got.payload == fmt.Sprintf("$%d\r\n%s\r\n", len(cand.value), cand.value) && cand.exists && !surelyExpired:
					v, err := hlc.Parse(got.version)
					if err != nil {
						t.Fatalf("%s: version %q", k.name, got.version)
					}
					if pending && !k.acked.version.Before(v) || !pending && v != cand.version {
						continue
					}
					s := cand
					s.version = v
					match = &s
				}
				if match != nil {
					break
				}
			}
			if match == nil {
				t.Fatalf("%s after restart: %q (version %q); acknowledged %+v, unanswered %+v", k.name, got.payload, got.version, k.acked, k.pending)
			}
			// The fencing token survived with the key.
			probe := []string{"VDEL", k.name, "\x00never"}
			if match.exists && match.fenced {
				older := hlc.Timestamp{Wall: match.token.Wall - 1, Node: match.token.Node}
				for _, p := range []struct {
					user []paho.UserProperty
					want string
				}{
					{nil, "-ERR " + wire.ErrFencingRequired.Text() + "\r\n"},
					{[]paho.UserProperty{fence(older)}, "-ERR " + wire.ErrFencingLower.Text() + "\r\n"},
					{[]paho.UserProperty{fence(match.token)}, ":-1\r\n"},
				} {
					if r := do(probe, p.user...); r.payload != p.want {
						t.Fatalf("%s: fencing probe answered %q, want %q (token %v)", k.name, r.payload, p.want, match.token)
					}
				}
			} else if match.exists {
				if r := do(probe); r.payload != ":-1\r\n" && r.payload != ":0\r\n" {
					t.Fatalf("%s: unprotected key answered %q", k.name, r.payload)
				}
			}
			k.acked, k.pending = *match, nil
		}
	}
}

// TestCrashRecovery kills the server with SIGKILL at random moments under
// write load from many clients and restarts it on the same data directory:
// every acknowledged change must be there, with its version and fencing
// token, and nothing that was not sent may appear. DSS_LONG=1 runs 200
// rounds instead of 3.
func TestCrashRecovery(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			crashRounds(t, dsstest.Rounds(3, 200), "--fsync", fsync, "--snapshot-after", "65536")
		})
	}
}

func crashRounds(t *testing.T, rounds int, args ...string) {
	dir := t.TempDir()
	if d := os.Getenv("DSS_E2E_DIR"); d != "" {
		dir = d // kept after the test, for a look at the files
	}
	addr := freeAddr(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	m := newModel(12, 6)
	args = append([]string{"--data", dir}, args...)
	for round := 0; round < rounds; round++ {
		p := startDSS(t, addr, args...)
		m.verify(t, p)
		stop := m.load(t, addr, round, seed, false)
		time.Sleep(time.Duration(100+r.IntN(900)) * time.Millisecond) // the crash comes at a random point of the load
		p.kill()
		stop()
		if testing.Verbose() {
			t.Logf("round %d: %s", round, recoveryLine(p.out.String()))
		}
		if t.Failed() {
			t.Fatalf("round %d failed; server output:\n%s", round, p.out)
		}
	}
	m.verify(t, startDSS(t, addr, args...))
	t.Logf("%d rounds, %d acknowledged changes", rounds, m.acked.Load())
	if m.acked.Load() == 0 {
		t.Fatal("no change was acknowledged: the test tested nothing")
	}
}

// load starts one client per worker; the returned function stops them.
func (m *model) load(t *testing.T, addr string, round int, seed uint64, graceful bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range m.keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.work(t, ctx, addr, w, round, seed+uint64(round), graceful)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// TestGracefulShutdown stops the server with SIGTERM under load, and
// every other round while the clients connect: it must answer every
// request it accepted, exit with status 0 (not waiting for a client that
// connected meanwhile), and come back with every acknowledged change.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	m := newModel(12, 6)
	args := []string{"--data", dir}
	for round := 0; round < dsstest.Rounds(2, 20); round++ {
		p := startDSS(t, addr, args...)
		m.verify(t, p)
		stop := m.load(t, addr, round, uint64(round), true)
		wait := 300 * time.Millisecond // under load for a while
		if round%2 == 0 {
			wait = time.Duration(rand.IntN(30)) * time.Millisecond // the clients are still connecting
		}
		time.Sleep(wait)
		if code := p.terminate(); code != 0 {
			t.Fatalf("exit status %d after SIGTERM:\n%s", code, p.out)
		}
		stop()
		if t.Failed() {
			t.Fatalf("server output:\n%s", p.out)
		}
	}
	m.verify(t, startDSS(t, addr, args...))
	if m.acked.Load() == 0 {
		t.Fatal("no change was acknowledged: the test tested nothing")
	}
}

// recoveryLine returns the server's log line about its recovery.
func recoveryLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "state recovered") {
			return l
		}
	}
	return "(no recovery line)"
}

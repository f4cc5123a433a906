package e2e_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// member is one dss process of a cluster under test.
type member struct {
	id      string
	mqtt    string
	cluster string
	data    string
	proc    *process
	// peers, when set, is the member's own --peers list (the others at
	// proxies of its own); http, when set, its --http-listen.
	peers string
	http  string
}

// testCluster is a cluster of real dss processes on loopback.
type testCluster struct {
	t       *testing.T
	members []*member
	peers   string
	extra   []string // more flags for every node
	secret  []byte   // the cluster secret, from DSS_CLUSTER_SECRET
	bin     string   // the dss binary the nodes run
}

// startCluster starts n dss processes that form a new cluster. The
// nodes' ports are below the ephemeral range (dsstest.NodeAddr), so that
// nothing but a listener takes them while a node is down; should another
// listener take one all the same between the draw and the start, the
// cluster starts again on new ports.
func startCluster(t *testing.T, n int, extra ...string) *testCluster {
	t.Helper()
	bin := dssBinary
	if dsstest.Long() || os.Getenv("DSS_E2E_RACE") != "" {
		// The long run, or a run that asks, has every cluster test run
		// a -race build of dss.
		bin = raceDSS(t)
	}
	return startClusterOf(t, bin, n, extra...)
}

// startRaceCluster is startCluster with nodes that run dss built with the
// race detector.
func startRaceCluster(t *testing.T, n int, extra ...string) *testCluster {
	t.Helper()
	return startClusterOf(t, raceDSS(t), n, extra...)
}

func startClusterOf(t *testing.T, bin string, n int, extra ...string) *testCluster {
	t.Helper()
	return startClusterWith(t, bin, n, nil, extra...)
}

// startClusterWith is startClusterOf with setup called on the members
// before they start, to give them peers lists or HTTP listeners of their
// own.
func startClusterWith(t *testing.T, bin string, n int, setup func([]*member), extra ...string) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, extra: extra, secret: []byte(os.Getenv("DSS_CLUSTER_SECRET")), bin: bin}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range tc.members {
				if m.proc != nil {
					t.Logf("log of %s:\n%s", m.id, m.proc.out)
				}
			}
		}
	})
	for attempt := 1; ; attempt++ {
		tc.members = nil
		var peers []string
		for i := 0; i < n; i++ {
			m := &member{id: fmt.Sprint("n", i+1), mqtt: dsstest.NodeAddr(t), cluster: dsstest.NodeAddr(t), data: t.TempDir()}
			tc.members = append(tc.members, m)
			peers = append(peers, m.id+"="+m.cluster)
		}
		tc.peers = strings.Join(peers, ",")
		if setup != nil {
			setup(tc.members)
		}
		started := true
		for _, m := range tc.members {
			if !tc.tryStart(m) {
				started = false
				break
			}
		}
		if started {
			break
		}
		for _, m := range tc.running() {
			m.proc.kill()
		}
		if attempt == 3 {
			t.Fatal("the cluster's ports were taken three times over")
		}
		t.Logf("a port was taken before its node bound it; starting the cluster again on new ports")
	}
	tc.leader()
	return tc
}

// start runs m's dss process. A node that restarts finds its ports free
// (nothing but a listener takes them) unless another test's listener took
// one meanwhile: then it tries again for a while.
func (tc *testCluster) start(m *member) {
	tc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !tc.tryStart(m) {
		if time.Now().After(deadline) {
			tc.t.Fatalf("%s could not bind its ports for 10s:\n%s", m.id, m.proc.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tryStart runs m's dss process: false if it exited at start because one
// of its ports is taken, fatal if it exited for another reason.
func (tc *testCluster) tryStart(m *member) bool {
	tc.t.Helper()
	peers := tc.peers
	if m.peers != "" {
		peers = m.peers
	}
	args := append([]string{"--node-id", m.id, "--cluster-listen", m.cluster, "--peers", peers, "--data", m.data}, tc.extra...)
	if m.http != "" {
		args = append(args, "--http-listen", m.http)
	}
	p, ok := tryStartBinary(tc.t, tc.bin, m.mqtt, args...)
	m.proc = p
	// What answered on the MQTT port may be another listener that took
	// it: the node's own start-up line says it bound every port.
	for deadline := time.Now().Add(20 * time.Second); ok && !strings.Contains(p.out.String(), "dss serving"); {
		select {
		case <-p.done:
			ok = false
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tc.t.Fatalf("%s did not report that it serves:\n%s", m.id, p.out)
		}
	}
	if ok {
		return true
	}
	if strings.Contains(p.out.String(), "address already in use") {
		return false
	}
	tc.t.Fatalf("dss exited at start: %v\n%s", p.err, p.out)
	return false
}

// status asks m's cluster listener for the cluster's status.
func (tc *testCluster) status(m *member) (cluster.Status, error) {
	return tc.statusWith(m, tc.secret)
}

func (tc *testCluster) statusWith(m *member, secret []byte) (cluster.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a, err := cluster.DialAdmin(ctx, m.cluster, secret)
	if err != nil {
		return cluster.Status{}, err
	}
	defer a.Close()
	return a.Status(ctx)
}

// leader waits until the running members agree on a leader and returns it.
func (tc *testCluster) leader() *member {
	tc.t.Helper()
	var leader *member
	dsstest.EventuallyWithin(tc.t, writeLimit, "a leader", func() bool {
		leader = nil
		for _, m := range tc.running() {
			st, err := tc.status(m)
			if err != nil || st.Leader == "" {
				return false
			}
			for _, l := range tc.members {
				if l.id == st.Leader {
					leader = l
				}
			}
		}
		return leader != nil && leader.alive()
	})
	return leader
}

func (m *member) alive() bool {
	select {
	case <-m.proc.done:
		return false
	default:
		return true
	}
}

func (tc *testCluster) running() []*member {
	var ms []*member
	for _, m := range tc.members {
		if m.alive() {
			ms = append(ms, m)
		}
	}
	return ms
}

func (tc *testCluster) others(not *member) []*member {
	var ms []*member
	for _, m := range tc.running() {
		if m != not {
			ms = append(ms, m)
		}
	}
	return ms
}

func ts() paho.UserProperty { return paho.UserProperty{Key: wire.PropTimestamp, Value: dsstest.Now()} }

func staleRead() paho.UserProperty {
	return paho.UserProperty{Key: wire.PropConsistency, Value: wire.ConsistencyStale}
}

// try sends one request and returns its response, or nil when none came
// within d.
func try(c *dsstest.Client, d time.Duration, payload []byte, user ...paho.UserProperty) *paho.Publish {
	ch := c.Send(payload, user...)
	select {
	case p := <-ch:
		return p
	case <-time.After(d):
		return nil
	}
}

func version(t *testing.T, p *paho.Publish) hlc.Timestamp {
	t.Helper()
	s, ok := dsstest.UserProperty(p, wire.PropTimestamp)
	if !ok {
		t.Fatalf("response %q has no __ts", p.Payload)
	}
	v, err := hlc.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// request sends a request, and sends it again with the same correlation
// data while it is answered "unavailable" or "busy" (a leader being
// elected), as a client does. A cluster applies a write sent again at
// most once.
func request(t *testing.T, c *dsstest.Client, payload []byte, user ...paho.UserProperty) *paho.Publish {
	t.Helper()
	corr := make([]byte, 16)
	_, _ = rand.Read(corr)
	deadline := time.Now().Add(writeLimit)
	for {
		p := c.Await(c.SendAs(corr, payload, user...))
		s := string(p.Payload)
		if s != "-ERR "+wire.ErrUnavailable.Text()+"\r\n" && s != "-ERR "+wire.ErrBusy.Text()+"\r\n" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q through %s: still %q after %v", payload, c.ID, s, writeLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeLimit bounds the waits for a write, a leader or a node catching up,
// where nothing but a hang could outlast it: a loaded machine stretches
// elections and commits.
const writeLimit = 30 * time.Second

// writeUntilOK sends SET key value through c until it is answered +OK, and
// returns the response and how long that took. Each attempt waits seconds
// for its answer (a node without a leader holds a request up to 2 s, and a
// loaded machine commits slowly): an answer that comes late is as good.
func writeUntilOK(t *testing.T, c *dsstest.Client, key, value string) (*paho.Publish, time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < writeLimit {
		if p := try(c, 5*time.Second, dsstest.Cmd("SET", key, value), ts()); p != nil && string(p.Payload) == "+OK\r\n" {
			return p, time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("SET %s through %s not answered +OK within %v", key, c.ID, writeLimit)
	return nil, 0
}

// TestClusterFailover: after SIGKILL of the leader, writes through the
// survivors succeed again, every acknowledged write is still there,
// versions keep growing, and the killed node catches up when it restarts.
// The time until writes resume is logged; the normal suite only bounds it
// generously (a loaded machine stretches elections: a node's vote waits
// for its disk), and DSS_LONG=1 runs five rounds and requires a median
// within 3 s.
func TestClusterFailover(t *testing.T) {
	tc := startCluster(t, 3)
	rounds := dsstest.Rounds(1, 5)
	var times []time.Duration
	var last hlc.Timestamp
	acked := map[string]string{}
	for round := 0; round < rounds; round++ {
		leader := tc.leader()
		survivors := tc.others(leader)
		var clients []*dsstest.Client
		for i, m := range survivors {
			clients = append(clients, dsstest.Dial(t, m.mqtt, fmt.Sprintf("r%d-c%d", round, i)))
		}
		for i := 0; i < 20; i++ {
			key, value := fmt.Sprint("k", i%7), fmt.Sprintf("r%d-v%d", round, i)
			p, _ := writeUntilOK(t, clients[i%len(clients)], key, value)
			if v := version(t, p); !last.Before(v) {
				t.Fatalf("version %v after %v", v, last)
			} else {
				last = v
			}
			acked[key] = value
		}
		leader.proc.kill()
		p, took := writeUntilOK(t, clients[0], "after-failover", fmt.Sprint(round))
		times = append(times, took)
		if v := version(t, p); !last.Before(v) {
			t.Fatalf("the new leader issued %v after %v", v, last)
		} else {
			last = v
		}
		t.Logf("round %d: writes through a survivor succeed %v after SIGKILL of leader %s", round, took.Round(time.Millisecond), leader.id)
		// Every acknowledged write is there, read linearizably.
		for key, value := range acked {
			for _, c := range clients {
				r := request(t, c, dsstest.Cmd("GET", key))
				if want := fmt.Sprintf("$%d\r\n%s\r\n", len(value), value); string(r.Payload) != want {
					t.Fatalf("GET %s through %s after failover: %q, want %q", key, c.ID, r.Payload, want)
				}
			}
		}
		// The killed node restarts and catches up.
		tc.start(leader)
		c := dsstest.Dial(t, leader.mqtt, fmt.Sprintf("r%d-back", round))
		want := fmt.Sprintf("$%d\r\n%d\r\n", len(fmt.Sprint(round)), round)
		dsstest.EventuallyWithin(t, writeLimit, "the restarted node to catch up", func() bool {
			r := try(c, time.Second, dsstest.Cmd("GET", "after-failover"), staleRead())
			return r != nil && string(r.Payload) == want
		})
	}
	slices.Sort(times)
	median := times[len(times)/2]
	t.Logf("failover: median %v over %d rounds (writes through a survivor succeed again after SIGKILL of the leader)", median.Round(time.Millisecond), len(times))
	if dsstest.Long() && median > 3*time.Second {
		t.Fatalf("writes resumed after a median of %v, want within 3s", median)
	}
}

// TestClusterMajorityLost: with two of three nodes gone, requests fail
// fast with "the state store is unavailable"; when they come back,
// service resumes by itself.
func TestClusterMajorityLost(t *testing.T) {
	for _, survivor := range []string{"leader", "follower"} {
		t.Run("the "+survivor+" survives", func(t *testing.T) {
			tc := startCluster(t, 3)
			last := tc.leader()
			if survivor == "follower" {
				last = tc.others(last)[0]
			}
			c := dsstest.Dial(t, last.mqtt, "alone")
			writeUntilOK(t, c, "k", "before")
			// A follower answers once the leader has applied the write,
			// and its own copy applies it on the leader's next message;
			// the writer's own reads there wait for that, stale ones too.
			if r := request(t, c, dsstest.Cmd("GET", "k"), staleRead()); string(r.Payload) != "$6\r\nbefore\r\n" {
				t.Fatalf("the writer's stale read: %q", r.Payload)
			}
			var gone []*member
			for _, m := range tc.others(last) {
				m.proc.kill()
				gone = append(gone, m)
			}
			unavailable := "-ERR " + wire.ErrUnavailable.Text() + "\r\n"
			dsstest.Eventually(t, "the survivor to notice", func() bool {
				start := time.Now()
				w := try(c, 5*time.Second, dsstest.Cmd("SET", "k", "during"), ts())
				if w == nil {
					t.Fatal("a write without a majority hung for 5s")
				}
				if string(w.Payload) != unavailable {
					return false
				}
				r := try(c, 5*time.Second, dsstest.Cmd("GET", "k"))
				if r == nil {
					t.Fatal("a read without a majority hung for 5s")
				}
				t.Logf("without a majority: write answered %q, read %q, in %v", w.Payload, r.Payload, time.Since(start).Round(time.Millisecond))
				return string(r.Payload) == unavailable
			})
			// A stale read is served from the survivor's own copy.
			if out, code := runDSS(t, "get", "--stale", "--server", last.mqtt, "k"); code != 0 || out != "before" {
				t.Fatalf("dss get --stale without a majority: exit %d, %q", code, out)
			}
			if out, code := runDSS(t, "get", "--server", last.mqtt, "--timeout", "3s", "k"); code != 2 {
				t.Fatalf("dss get (linearizable) without a majority: exit %d, %q", code, out)
			}
			for _, m := range gone {
				tc.start(m)
			}
			writeUntilOK(t, c, "k", "after")
			if r := request(t, c, dsstest.Cmd("GET", "k")); string(r.Payload) != "$5\r\nafter\r\n" {
				t.Fatalf("GET after recovery: %q", r.Payload)
			}
		})
	}
}

// TestClusterRetryIsNotAppliedTwice: a request sent again with the same
// correlation data, through another node and after the leader changed, is
// answered with the first result and not applied again.
func TestClusterRetryIsNotAppliedTwice(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.leader()
	followers := tc.others(leader)
	a := dsstest.Dial(t, followers[0].mqtt, "retrier")
	corr := []byte("retried-request-1")
	nx := dsstest.Cmd("SET", "lock", "mine", "NX")
	var first *paho.Publish
	dsstest.Eventually(t, "the first SET NX", func() bool {
		first = a.Await(a.SendAs(corr, nx, ts()))
		return string(first.Payload) != "-ERR "+wire.ErrUnavailable.Text()+"\r\n"
	})
	if string(first.Payload) != "+OK\r\n" {
		t.Fatalf("first SET NX: %q", first.Payload)
	}
	// The same request through the leader: a new request would not meet
	// NX; the retry gets the first answer.
	b := dsstest.Dial(t, leader.mqtt, "retrier")
	var again *paho.Publish
	dsstest.Eventually(t, "the retry", func() bool {
		again = b.Await(b.SendAs(corr, nx, ts()))
		return string(again.Payload) != "-ERR "+wire.ErrUnavailable.Text()+"\r\n"
	})
	if string(again.Payload) != "+OK\r\n" || version(t, again) != version(t, first) {
		t.Fatalf("the retry: %q %v, want +OK %v", again.Payload, version(t, again), version(t, first))
	}
	leader.proc.kill()
	c := dsstest.Dial(t, followers[1].mqtt, "retrier")
	dsstest.Eventually(t, "the retry after failover", func() bool {
		r := c.Await(c.SendAs(corr, nx, ts()))
		if string(r.Payload) == "-ERR "+wire.ErrUnavailable.Text()+"\r\n" {
			return false // no leader yet: a client sends it again
		}
		again = r
		return true
	})
	if string(again.Payload) != "+OK\r\n" || version(t, again) != version(t, first) {
		t.Fatalf("the retry after failover: %q, want the first answer +OK %v", again.Payload, version(t, first))
	}
	// A new request (new correlation data) is not met: the key exists.
	if r := request(t, c, nx, ts()); string(r.Payload) != ":-1\r\n" {
		t.Fatalf("a new SET NX: %q", r.Payload)
	}
}

// TestClusterNotificationsOnEveryNode: each node delivers to its own
// KEYNOTIFY clients every change, in apply order.
func TestClusterNotificationsOnEveryNode(t *testing.T) {
	tc := startCluster(t, 3)
	var watchers []*dsstest.Client
	for i, m := range tc.members {
		w := dsstest.Dial(t, m.mqtt, fmt.Sprint("watcher", i))
		w.Subscribe(wire.NotifyTopicFilter(w.ID))
		if r := w.Request(dsstest.Cmd("KEYNOTIFY", "watched")); string(r.Payload) != "+OK\r\n" {
			t.Fatalf("KEYNOTIFY: %q", r.Payload)
		}
		watchers = append(watchers, w)
	}
	var writers []*dsstest.Client
	for i, m := range tc.members {
		writers = append(writers, dsstest.Dial(t, m.mqtt, fmt.Sprint("writer", i)))
	}
	const writes = 30
	// Writes through every node at once: the order is the log's.
	done := make(chan struct{})
	for i, w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := i; j < writes; j += len(writers) {
				request(t, w, dsstest.Cmd("SET", "watched", fmt.Sprint("v", j)), ts())
			}
		}()
	}
	for range writers {
		<-done
	}
	var orders [][]string
	for _, w := range watchers {
		var order []string
		var last hlc.Timestamp
		for len(order) < writes {
			p := w.Next()
			v := version(t, p)
			if !last.Before(v) {
				t.Fatalf("%s: notification version %v after %v", w.ID, v, last)
			}
			last = v
			order = append(order, string(p.Payload))
		}
		orders = append(orders, order)
	}
	for i := 1; i < len(orders); i++ {
		if !slices.Equal(orders[0], orders[i]) {
			t.Fatalf("node 1 and node %d notified in different orders:\n%q\n%q", i+1, orders[0], orders[i])
		}
	}
}

// TestClusterEmptyNodeCatchesUpFromSnapshot: a node whose data directory
// is lost rejoins with an empty one and receives the state as a snapshot.
func TestClusterEmptyNodeCatchesUpFromSnapshot(t *testing.T) {
	tc := startCluster(t, 3, "--cluster-snapshot-threshold", "64", "--cluster-trailing-logs", "16", "--cluster-snapshot-interval", "100ms")
	leader := tc.leader()
	lost := tc.others(leader)[0]
	lost.proc.kill()
	c := dsstest.Dial(t, leader.mqtt, "filler")
	const keys = 400
	for i := 0; i < keys; i++ {
		writeUntilOK(t, c, fmt.Sprint("key", i), fmt.Sprint("value", i))
	}
	// The leader compacted its log: the lost node cannot catch up entry by
	// entry.
	dsstest.Eventually(t, "a snapshot on the leader", func() bool {
		entries, _ := os.ReadDir(leader.data + "/raft/snapshots")
		return len(entries) > 0
	})
	if err := os.RemoveAll(lost.data); err != nil {
		t.Fatal(err)
	}
	lost.data = t.TempDir()
	tc.start(lost)
	r := dsstest.Dial(t, lost.mqtt, "reader")
	want := fmt.Sprintf("$%d\r\nvalue%d\r\n", len(fmt.Sprint("value", keys-1)), keys-1)
	dsstest.Eventually(t, "the empty node to catch up", func() bool {
		p := try(r, time.Second, dsstest.Cmd("GET", fmt.Sprint("key", keys-1)), staleRead())
		return p != nil && string(p.Payload) == want
	})
	var missing []string
	for i := 0; i < keys; i++ {
		p := r.Request(dsstest.Cmd("GET", fmt.Sprint("key", i)), staleRead())
		if want := fmt.Sprintf("$%d\r\nvalue%d\r\n", len(fmt.Sprint("value", i)), i); string(p.Payload) != want {
			missing = append(missing, fmt.Sprintf("key%d: %q", i, p.Payload))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d keys wrong on the rejoined node: %v", len(missing), missing)
	}
}

// dssCluster runs `dss cluster ARGS...` and returns its output.
func dssCluster(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(dssBinary, append([]string{"cluster"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestClusterMembership: a fourth node is added at runtime, catches up and
// votes; then it is removed again.
func TestClusterMembership(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.leader()
	c := dsstest.Dial(t, leader.mqtt, "writer")
	writeUntilOK(t, c, "before", "4")
	// The new node is not in --peers: it waits to be added.
	n4 := &member{id: "n4", mqtt: dsstest.NodeAddr(t), cluster: dsstest.NodeAddr(t), data: t.TempDir()}
	tc.start(n4)
	tc.members = append(tc.members, n4)
	out, err := dssCluster(t, nil, "add", "n4", n4.cluster, "--cluster-addr", tc.members[0].cluster)
	if err != nil {
		t.Fatalf("dss cluster add: %v\n%s", err, out)
	}
	r := dsstest.Dial(t, n4.mqtt, "reader")
	dsstest.Eventually(t, "the new node to catch up", func() bool {
		p := try(r, time.Second, dsstest.Cmd("GET", "before"), staleRead())
		return p != nil && string(p.Payload) == "$1\r\n4\r\n"
	})
	out, err = dssCluster(t, nil, "status", "--cluster-addr", n4.cluster)
	if err != nil || !strings.Contains(out, "n4") || strings.Count(out, "Follower")+strings.Count(out, "Leader") < 4 {
		t.Fatalf("dss cluster status after the addition: %v\n%s", err, out)
	}
	t.Logf("dss cluster status:\n%s", out)
	// Writes through the new node work: it forwards them.
	w := dsstest.Dial(t, n4.mqtt, "writer4")
	writeUntilOK(t, w, "through-n4", "x")
	out, err = dssCluster(t, nil, "remove", "n4", "--cluster-addr", tc.members[1].cluster)
	if err != nil {
		t.Fatalf("dss cluster remove: %v\n%s", err, out)
	}
	dsstest.Eventually(t, "three members again", func() bool {
		st, err := tc.status(leader)
		return err == nil && len(st.Members) == 3
	})
}

// TestClusterSecret: with a cluster secret, the cluster listener refuses
// whoever does not hold it, and the members (and dss cluster) that hold
// it work as without.
func TestClusterSecret(t *testing.T) {
	secret := "DSS_CLUSTER_SECRET=0123456789abcdef0123456789abcdef"
	t.Setenv("DSS_CLUSTER_SECRET", "0123456789abcdef0123456789abcdef")
	tc := startCluster(t, 3) // the nodes inherit the secret
	leader := tc.leader()
	c := dsstest.Dial(t, leader.mqtt, "writer")
	writeUntilOK(t, c, "k", "v")
	if out, err := dssCluster(t, []string{secret}, "status", "--cluster-addr", leader.cluster); err != nil || !strings.Contains(out, "leader: "+leader.id) {
		t.Fatalf("dss cluster status with the secret: %v\n%s", err, out)
	}
	wrong := "DSS_CLUSTER_SECRET=not-the-secret-of-this-cluster"
	if out, err := dssCluster(t, []string{wrong}, "add", "intruder", "127.0.0.1:1", "--cluster-addr", leader.cluster, "--timeout", "3s"); err == nil {
		t.Fatalf("dss cluster add with a wrong secret succeeded:\n%s", out)
	}
	if out, err := dssCluster(t, []string{"DSS_CLUSTER_SECRET="}, "status", "--cluster-addr", leader.cluster, "--timeout", "3s"); err == nil {
		t.Fatalf("dss cluster status without a secret succeeded:\n%s", out)
	} else if !strings.Contains(out, "DSS_CLUSTER_SECRET") || !strings.Contains(out, "--cluster-secret-file") {
		t.Fatalf("dss cluster status without a secret does not say that the cluster needs one:\n%s", out)
	}
	st, err := tc.statusWith(leader, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil || len(st.Members) != 3 {
		t.Fatalf("members after the refused attempts: %+v %v", st.Members, err)
	}
}

// TestClusterLeaderStopsGracefully: a leader stopped with SIGTERM hands its
// leadership over before it exits, and writes through the others go on.
func TestClusterLeaderStopsGracefully(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.leader()
	c := dsstest.Dial(t, tc.others(leader)[0].mqtt, "writer")
	writeUntilOK(t, c, "k", "before")
	if code := leader.proc.terminate(); code != 0 {
		t.Fatalf("the leader exited with status %d after SIGTERM:\n%s", code, leader.proc.out)
	}
	_, took := writeUntilOK(t, c, "k", "after")
	t.Logf("writes through a survivor succeed %v after the leader stopped", took.Round(time.Millisecond))
	if next := tc.leader(); next == leader {
		t.Fatal("the stopped node is still named leader")
	}
}

package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dssio/dss/internal/bench"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// run runs a short benchmark of op against a fresh server.
func run(t *testing.T, op string, cfg bench.Config) *bench.Report {
	t.Helper()
	if cfg.Server == "" {
		cfg.Server = dsstest.StartServer(t, server.Config{}).Addr()
	}
	w, err := bench.ParseWorkload(op)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workload = w
	if cfg.Clients == 0 {
		cfg.Clients = 2
	}
	if cfg.Duration == 0 {
		cfg.Duration = time.Second
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = 200 * time.Millisecond
	}
	if cfg.Keys == 0 {
		cfg.Keys = 100
	}
	if cfg.Timeout == 0 {
		// No answered request times out on a busy machine; a server that
		// stops answering still fails the run.
		cfg.Timeout = time.Minute
	}
	// Longer than the requests' timeout, so that a server that stops
	// answering shows as timeouts.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// windows are the measured windows of a timed run, tried in turn. On a
// loaded machine a worker may first run after a short window has ended and
// measure nothing, which is no fault of the run: a longer one then
// measures requests. Only what a window alone produces (the per-second
// timeline, the server's CPU and memory over the window) is checked on a
// timed run; counts are checked on counted runs (Config.Requests).
var windows = []time.Duration{time.Second, 3 * time.Second, 10 * time.Second}

// timedRun runs op for a measured window, and again with a longer window
// while a window measured no request. Every run must be clean.
func timedRun(t *testing.T, op string, cfg bench.Config) *bench.Report {
	t.Helper()
	if cfg.Timeout == 0 {
		// Long enough that no answered request times out on a busy
		// machine; a server that stops answering still fails the run.
		cfg.Timeout = 30 * time.Second
	}
	var rep *bench.Report
	for _, d := range windows {
		cfg.Duration = d
		rep = run(t, op, cfg)
		clean(t, rep)
		if rep.Requests > 0 {
			break
		}
		t.Logf("a %v window measured no request; running a longer one", d)
	}
	return rep
}

// countedRun runs n requests of op, however slowly the machine runs them.
func countedRun(t *testing.T, op string, n int64, cfg bench.Config) *bench.Report {
	t.Helper()
	cfg.Requests = n
	// No answered request times out on a busy machine.
	cfg.Timeout = time.Minute
	rep := run(t, op, cfg)
	clean(t, rep)
	measured(t, rep)
	if rep.Requests != n {
		t.Fatalf("a run of %d requests measured %d", n, rep.Requests)
	}
	return rep
}

// clean fails the test if the run saw any error or timeout.
func clean(t *testing.T, rep *bench.Report) {
	t.Helper()
	if rep.Errors != 0 || rep.Timeouts != 0 || rep.Late != 0 {
		t.Fatalf("errors %d %v %v, timeouts %d, late %d", rep.Errors, rep.ErrorsByKind, rep.ErrorSamples, rep.Timeouts, rep.Late)
	}
}

// measured checks the counts of a run that measured requests.
func measured(t *testing.T, rep *bench.Report) {
	t.Helper()
	if rep.Requests <= 0 {
		t.Fatalf("no request measured: %+v", rep)
	}
	if rep.Latency == nil || rep.Latency.Count != rep.Requests {
		t.Fatalf("latency histogram holds %v samples for %d requests", rep.Latency, rep.Requests)
	}
	if l := rep.Latency; !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Fatalf("percentiles out of order: %+v", l)
	}
	if rep.Sent < rep.Requests || rep.Throughput <= 0 || rep.Seconds <= 0 {
		t.Fatalf("sent %d, requests %d, throughput %v over %vs", rep.Sent, rep.Requests, rep.Throughput, rep.Seconds)
	}
	var n int64
	for _, outs := range rep.Outcomes {
		for _, c := range outs {
			n += c
		}
	}
	if n != rep.Requests {
		t.Fatalf("outcomes %v add up to %d, not %d", rep.Outcomes, n, rep.Requests)
	}
	timeline(t, rep)
}

// timeline checks the per-second timeline of a run of fixed duration.
func timeline(t *testing.T, rep *bench.Report) {
	t.Helper()
	if len(rep.Timeline) == 0 {
		return // a run of a fixed number of requests has none
	}
	var n int64
	for i, s := range rep.Timeline {
		n += s.Responses
		switch {
		case s.Responses == 0 && (s.P99NS != 0 || s.MaxNS != 0):
			t.Fatalf("second %d: no responses, p99 %d ns, max %d ns", i, s.P99NS, s.MaxNS)
		// The p99 has two significant digits: it may exceed the maximum
		// by the width of its bucket.
		case s.Responses > 0 && (s.P99NS <= 0 || s.P99NS > s.MaxNS+s.MaxNS/50):
			t.Fatalf("second %d: %d responses, p99 %d ns, max %d ns", i, s.Responses, s.P99NS, s.MaxNS)
		}
	}
	if n < rep.Requests {
		t.Fatalf("the timeline counts %d responses, fewer than the %d measured", n, rep.Requests)
	}
}

// TestSet is a timed run: only a window has a per-second timeline.
func TestSet(t *testing.T) {
	rep := timedRun(t, "set", bench.Config{})
	measured(t, rep)
	if len(rep.Timeline) == 0 {
		t.Fatal("a timed run has no timeline")
	}
	if rep.Outcomes["SET"]["ok"] != rep.Requests {
		t.Fatalf("outcomes %v", rep.Outcomes)
	}
	if rep.Preload != nil {
		t.Fatal("a SET run does not preload")
	}
}

// TestPipelinedRequests keeps eight requests in flight per connection: the
// broker must not hang when a response is queued to a client while it
// reads the client's next request (a deadlock of the broker library that
// internal/mqtt fixes).
//
// A counted run: 5,000 requests however slowly the machine runs them. A
// broker that hangs leaves requests unanswered, which the run counts as
// timeouts after a minute.
func TestPipelinedRequests(t *testing.T) {
	countedRun(t, "set", 5000, bench.Config{Inflight: 8})
}

func TestGetFindsThePreloadedKeys(t *testing.T) {
	rep := countedRun(t, "get", 200, bench.Config{ValueSize: 1000})
	if rep.Preload == nil || rep.Preload.Requests != 100 {
		t.Fatalf("preload %+v, want 100 keys", rep.Preload)
	}
	if rep.Outcomes["GET"]["ok"] != 200 {
		t.Fatalf("every GET must hit: %v", rep.Outcomes)
	}
}

func TestGetWithoutPreloadMisses(t *testing.T) {
	no := false
	rep := countedRun(t, "get", 200, bench.Config{Preload: &no})
	if rep.Preload != nil {
		t.Fatalf("preload %+v, want none", rep.Preload)
	}
	if rep.Outcomes["GET"]["missing"] != 200 {
		t.Fatalf("every GET must miss: %v", rep.Outcomes)
	}
}

func TestMix(t *testing.T) {
	rep := countedRun(t, "mix:0.5", 400, bench.Config{})
	// Every GET finds a preloaded key. Of 400 requests, half GETs by
	// chance, none or all being GETs has a probability of 2^-399.
	gets, sets := rep.Outcomes["GET"]["ok"], rep.Outcomes["SET"]["ok"]
	if gets == 0 || sets == 0 || gets+sets != 400 {
		t.Fatalf("a mix sends both verbs, and its GETs hit: %v", rep.Outcomes)
	}
}

func TestDeleteVerbs(t *testing.T) {
	for _, op := range []string{"del", "vdel"} {
		t.Run(op, func(t *testing.T) {
			// A counted run: 50 deletions of 10 keys, however slowly the
			// machine runs them.
			rep := run(t, op, bench.Config{Keys: 10, Requests: 50, Timeout: time.Minute})
			clean(t, rep)
			measured(t, rep)
			verb := map[string]string{"del": "DEL", "vdel": "VDEL"}[op]
			// The preload stored 10 keys: at most 10 deletions found one,
			// and at least 40 found none.
			ok, missing := rep.Outcomes[verb]["ok"], rep.Outcomes[verb]["missing"]
			if ok < 1 || ok > 10 || ok+missing != 50 {
				t.Fatalf("outcomes %v", rep.Outcomes)
			}
		})
	}
}

func TestFillStoresEveryKey(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	rep := run(t, "fill", bench.Config{Server: s.Addr(), Keys: 257, Clients: 3, KeyPrefix: "f/", ValueSize: 7})
	clean(t, rep)
	if rep.Requests != 257 || rep.Outcomes["SET"]["ok"] != 257 {
		t.Fatalf("fill stored %d keys: %v", rep.Requests, rep.Outcomes)
	}
	c := dsstest.Dial(t, s.Addr(), "check")
	for _, key := range []string{"f/000", "f/128", "f/256"} {
		if r := c.Request(dsstest.Cmd("GET", key)); string(r.Payload) != "$7\r\nabcdefg\r\n" {
			t.Fatalf("GET %s = %q", key, r.Payload)
		}
	}
}

// TestServerCPUAndMemory is a timed run: the server's CPU time and memory
// are read at the ends of its window.
func TestServerCPUAndMemory(t *testing.T) {
	// The server runs in this process.
	rep := timedRun(t, "set", bench.Config{ServerPID: os.Getpid()})
	if rep.ServerCPUPerRequest == nil || *rep.ServerCPUPerRequest <= 0 || rep.ServerRSSEnd == nil || *rep.ServerRSSEnd <= 0 {
		t.Fatalf("server usage missing: %+v", rep)
	}
	if rep.ClientCPUPerRequest <= 0 {
		t.Fatalf("client CPU per request %v", rep.ClientCPUPerRequest)
	}
}

func TestIdle(t *testing.T) {
	rep := run(t, "idle", bench.Config{Clients: 20, Duration: 100 * time.Millisecond, ServerPID: os.Getpid()})
	clean(t, rep)
	if rep.Connections != 20 || rep.ServerRSSEnd == nil {
		t.Fatalf("report %+v", rep)
	}
}

// TestKeyNotifyReachesEveryWatcher is a counted run of 50 notifications,
// however slowly the machine runs them.
func TestKeyNotifyReachesEveryWatcher(t *testing.T) {
	rep := run(t, "keynotify", bench.Config{Watchers: 5, Requests: 50})
	clean(t, rep)
	n := rep.Notify
	if n == nil || n.Notifications != 50 || n.Complete != n.Notifications || rep.Requests != 50 {
		t.Fatalf("notify report %+v", n)
	}
	if n.Deliveries != 5*n.Complete {
		t.Fatalf("%d deliveries of %d notifications to 5 watchers", n.Deliveries, n.Complete)
	}
	if n.All == nil || n.Each == nil || n.Set == nil || n.All.P50 < n.Each.P50 {
		t.Fatalf("latencies all %+v each %+v set %+v", n.All, n.Each, n.Set)
	}
}

func TestUnreachableServer(t *testing.T) {
	_, err := bench.Run(context.Background(), bench.Config{Server: dsstest.ClosedAddr(t), Timeout: time.Second}, nil)
	if err == nil {
		t.Fatal("a run against a closed port must fail")
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep, err := bench.Run(ctx, bench.Config{Server: s.Addr(), Clients: 2, Duration: time.Hour, Warmup: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("the run took %v after its context ended", time.Since(start))
	}
	if rep.Errors != 0 {
		t.Fatalf("stopping is not an error: %v %v", rep.ErrorsByKind, rep.ErrorSamples)
	}
}

func TestCountedRunSendsExactlyThatMany(t *testing.T) {
	rep := run(t, "mix:0.5", bench.Config{Clients: 3, Requests: 500})
	clean(t, rep)
	measured(t, rep)
	if rep.Requests != 500 || rep.Sent != 500+100 { // 100 preloaded keys
		t.Fatalf("requests %d, sent %d; want 500 and 600", rep.Requests, rep.Sent)
	}
}

// TestKeyNotifyThroughAPattern is the fan-out run with every watcher
// registered for a pattern that the written key matches.
func TestKeyNotifyThroughAPattern(t *testing.T) {
	rep := run(t, "keynotify:pattern", bench.Config{Watchers: 5, Requests: 50, KeyPrefix: "b*["})
	clean(t, rep)
	n := rep.Notify
	if n == nil || n.Registration != "pattern" || n.Notifications != 50 || n.Complete != 50 || n.Deliveries != 250 {
		t.Fatalf("notify report %+v", n)
	}
}

// TestWatchReachesEveryWatcher is a counted run of SETs on the keys of
// watchers that each watch a key or a pattern of their own: every SET
// reaches its watcher, once.
func TestWatchReachesEveryWatcher(t *testing.T) {
	for _, op := range []string{"watch", "watch:pattern"} {
		t.Run(op, func(t *testing.T) {
			rep := run(t, op, bench.Config{Watchers: 20, Clients: 3, Inflight: 2, Requests: 300, ServerPID: os.Getpid()})
			clean(t, rep)
			n := rep.Notify
			want := map[string]string{"watch": "key", "watch:pattern": "pattern"}[op]
			if n == nil || n.Registration != want || n.Writers != 3 || n.Watchers != 20 {
				t.Fatalf("notify report %+v", n)
			}
			if n.Notifications != 300 || n.Deliveries != 300 || n.Missing != 0 || rep.Requests != 300 {
				t.Fatalf("%d SETs, %d deliveries, %d missing, %d requests; want 300 each, none missing",
					n.Notifications, n.Deliveries, n.Missing, rep.Requests)
			}
			if n.Each == nil || n.Each.Count != 300 || n.Set == nil || n.Set.Count != 300 || rep.Latency != n.Each {
				t.Fatalf("latencies each %+v set %+v", n.Each, n.Set)
			}
			if l := n.Each; !(l.P50 > 0 && l.P50 <= l.P99 && l.P99 <= l.Max) {
				t.Fatalf("percentiles out of order: %+v", l)
			}
			if rep.Throughput <= 0 || rep.ServerCPUPerRequest == nil {
				t.Fatalf("throughput %v, server CPU %v", rep.Throughput, rep.ServerCPUPerRequest)
			}
		})
	}
}

// TestWatchTimed is a timed run: only the notifications of the SETs
// written in the window are measured.
func TestWatchTimed(t *testing.T) {
	var rep *bench.Report
	for _, d := range windows {
		rep = run(t, "watch:pattern", bench.Config{Watchers: 10, Clients: 2, Duration: d, Timeout: 30 * time.Second})
		clean(t, rep)
		if rep.Requests > 0 {
			break
		}
		t.Logf("a %v window measured no notification; running a longer one", d)
	}
	n := rep.Notify
	if n.Deliveries <= 0 || n.Each == nil || n.Each.Count != n.Deliveries || rep.Throughput <= 0 || rep.Seconds <= 0 {
		t.Fatalf("report %+v, notify %+v", rep, n)
	}
}

// Every message of a pubsub run reaches every subscriber, in order, on
// one server and from one node of a cluster to another, with QoS 0 and 1;
// the report counts them and the CPU of both servers.
func TestPubSubReachesEverySubscriber(t *testing.T) {
	single := dsstest.StartServer(t, server.Config{}).Addr()
	nodes := dsstest.StartCluster(t, 3, server.Config{})
	for _, c := range []struct {
		name        string
		server, sub string
	}{{"one server", single, ""}, {"across nodes", nodes[0].Addr(), nodes[1].Addr()}} {
		for _, qos := range []byte{0, 1} {
			rep := run(t, "pubsub", bench.Config{Server: c.server, SubServer: c.sub, Subscribers: 3, QoS: qos,
				Inflight: 2, ServerPID: os.Getpid(), SubServerPID: os.Getpid()})
			clean(t, rep)
			p := rep.PubSub
			if p == nil || rep.Requests == 0 || p.Subscribers != 3 || p.Publishers != 2 || p.QoS != qos {
				t.Fatalf("%s, QoS %d: report %+v, %+v", c.name, qos, rep, p)
			}
			if p.Deliveries != 3*rep.Requests || p.Lost != 0 {
				t.Fatalf("%s, QoS %d: %d deliveries of %d messages to 3 subscribers, %d lost", c.name, qos, p.Deliveries, rep.Requests, p.Lost)
			}
			if rep.Latency == nil || (qos == 1) != (p.Puback != nil) {
				t.Fatalf("%s, QoS %d: latency %+v, puback %+v", c.name, qos, rep.Latency, p.Puback)
			}
		}
	}
}

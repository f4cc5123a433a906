package broker

import (
	"fmt"
	"runtime"
	"testing"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// notifyCase is a way 1,000 connections watch and the keys that change.
type notifyCase struct {
	name    string
	pattern bool
	reg     func(i int) string // what connection i registers for
	changed func(i int) string // the key of change i
	per     int                // notifications per change
}

// notifyCases are the cases of BenchmarkNotifyChanged and
// BenchmarkNotifyLookup, for watchers connections:
//
//   - key-each / pattern-each: connection i watches b/<i>/k, or b/<i>/*;
//     a change of one key reaches one connection. The patterns cost one
//     map lookup, all their literal starts having one length.
//   - pattern-each-no-prefix: connection i watches *<i>/k, patterns with
//     no literal start, found by their literal end instead.
//   - key-shared / pattern-shared: every connection watches b/0/k, or
//     b/*; a change reaches all 1,000.
//
// A change of a key nobody watches is measured too (miss), since most
// changes of a busy store are.
func notifyCases(watchers int) []notifyCase {
	key := func(i int) string { return fmt.Sprintf("b/%04d/k", i) }
	return []notifyCase{
		{"key-each", false, key, func(i int) string { return key(i % watchers) }, 1},
		{"pattern-each", true, func(i int) string { return fmt.Sprintf("b/%04d/*", i) }, func(i int) string { return key(i % watchers) }, 1},
		{"pattern-each-no-prefix", true, func(i int) string { return fmt.Sprintf("*%04d/k", i) }, func(i int) string { return key(i % watchers) }, 1},
		{"key-shared", false, func(int) string { return key(0) }, func(int) string { return key(0) }, watchers},
		{"pattern-shared", true, func(int) string { return "b/*" }, func(int) string { return key(0) }, watchers},
		{"key-each-miss", false, key, func(int) string { return "other/k" }, 0},
		{"pattern-each-miss", true, func(i int) string { return fmt.Sprintf("b/%04d/*", i) }, func(int) string { return "other/k" }, 0},
	}
}

// setUp registers conns as bm says with a new registry whose
// notifications count in *sent, and returns it with the changes to make.
func (bm notifyCase) setUp(b *testing.B, conns []*mqtt.Client, sent *int) (*registry, []store.Change) {
	r := newRegistry(NewMetrics(), func(*mqtt.Client, *packets.Packet) { *sent++ })
	for i, cl := range conns {
		op := &engine.Op{Request: wire.Request{Verb: wire.VerbKeyNotify, Key: []byte(bm.reg(i)), Pattern: bm.pattern}, Caller: &call{client: cl}}
		r.KeyNotify(op)
		if op.Result.Err != nil {
			b.Fatalf("KEYNOTIFY %q: %v", bm.reg(i), op.Result.Err)
		}
	}
	changes := make([]store.Change, len(conns))
	for i := range changes {
		changes[i] = store.Change{Key: bm.changed(i), Value: make([]byte, 100)}
	}
	return r, changes
}

// cpuPerOp reports the CPU time per op of the benchmark's goroutine,
// which it keeps on one OS thread, as cpu-ns/op: on a machine shared with
// other work, a figure that ns/op (time on the clock) is not. Call the
// function it returns after the loop.
func cpuPerOp(b *testing.B) (done func()) {
	runtime.LockOSThread()
	start, ok := threadCPU()
	return func() {
		end, _ := threadCPU()
		runtime.UnlockOSThread()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// benchConns returns n connections of one server.
func benchConns(n int) []*mqtt.Client {
	srv := mqtt.New(&mqtt.Options{})
	conns := make([]*mqtt.Client, n)
	for i := range conns {
		conns[i] = srv.NewClient(nil, "bench", fmt.Sprintf("w%04d", i), true)
	}
	return conns
}

// BenchmarkNotifyChanged is the cost per change of finding and notifying
// its watchers (registry.Changed and the delivery it returns, up to the
// hand-over of each notification to its connection), with 1,000
// connections registered for keys or for patterns (notifyCases).
func BenchmarkNotifyChanged(b *testing.B) {
	const watchers = 1000
	conns := benchConns(watchers)
	for _, bm := range notifyCases(watchers) {
		b.Run(bm.name, func(b *testing.B) {
			sent := 0
			r, changes := bm.setUp(b, conns, &sent)
			b.ReportAllocs()
			done := cpuPerOp(b)
			n := 0
			for b.Loop() {
				if deliver := r.Changed(&changes[n%watchers]); deliver != nil {
					deliver()
				}
				n++
			}
			done()
			if want := n * bm.per; sent != want {
				b.Fatalf("%d notifications for %d changes, want %d", sent, n, want)
			}
		})
	}
}

// BenchmarkNotifyLookup is the share of BenchmarkNotifyChanged that the
// engine waits for: registry.Changed alone, which finds a change's
// recipients under the engine's lock and the registry's, without the
// delivery that follows on another goroutine. With a key each, a pattern
// watcher should cost what a key watcher does (pattern-each against
// key-each).
func BenchmarkNotifyLookup(b *testing.B) {
	const watchers = 1000
	conns := benchConns(watchers)
	for _, bm := range notifyCases(watchers) {
		b.Run(bm.name, func(b *testing.B) {
			sent := 0
			r, changes := bm.setUp(b, conns, &sent)
			b.ReportAllocs()
			done := cpuPerOp(b)
			n, found := 0, 0
			for b.Loop() {
				if r.Changed(&changes[n%watchers]) != nil {
					found++
				}
				n++
			}
			done()
			if want := min(bm.per, 1) * n; found != want {
				b.Fatalf("%d deliveries for %d changes, want %d", found, n, want)
			}
		})
	}
}

package cluster

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// A retry is answered what the first attempt was: its error, outcome
// and version, and nothing a write's answer does not carry.
func TestDedupeAnswersARetryAsTheFirstAttempt(t *testing.T) {
	d := newDedupe(1000)
	v := hlc.Timestamp{Wall: 1700000000000, Counter: 3, Node: "n2"}
	d.add("set", 100, engine.Result{Outcome: store.Applied, Version: v, HasVersion: true, Value: []byte("x"), Found: true, Now: 7})
	d.add("refused", 100, engine.Result{Outcome: store.NotMet, Err: wire.ErrFencingLower})
	d.add("del", 100, engine.Result{Outcome: store.Applied})
	for _, c := range []struct {
		key  string
		want engine.Result
	}{
		{"set", engine.Result{Outcome: store.Applied, Version: v, HasVersion: true}},
		{"refused", engine.Result{Outcome: store.NotMet, Err: wire.ErrFencingLower}},
		{"del", engine.Result{Outcome: store.Applied}},
	} {
		got, ok := d.get(c.key)
		if !ok || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s: %+v (%v), want %+v", c.key, got, ok, c.want)
		}
	}
	if _, ok := d.get("other"); ok {
		t.Error("a request never seen is taken for a retry")
	}
}

// BenchmarkDedupeMemory reports the heap one remembered write takes,
// its key included (a 36-character client id, 16 bytes of correlation
// data and the digest): the table holds every write of the window.
func BenchmarkDedupeMemory(b *testing.B) {
	const n = 100000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := newDedupe(1 << 40)
		for i := range n {
			key := string(fmt.Appendf(nil, "%-38s%016d%016d", "a1b2c3d4-e5f6-4789-abcd-0123456789ab", i, i*7))
			d.add(key, int64(i), engine.Result{Outcome: store.Applied, Version: hlc.Timestamp{Wall: int64(i), Node: "n1"}, HasVersion: true})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/write")
		runtime.KeepAlive(d)
	}
}

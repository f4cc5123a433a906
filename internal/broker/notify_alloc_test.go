package broker

import (
	"fmt"
	"testing"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// TestChangedWithoutRecipientsAllocatesNothing: the engine asks the
// registry about every change it applies, and most changes of a busy store
// have no watcher. Finding none must cost no allocation, whether nothing
// is registered, only other keys are, or only patterns the key does not
// match (a SET stays free of allocations in the server).
func TestChangedWithoutRecipientsAllocatesNothing(t *testing.T) {
	srv := mqtt.New(&mqtt.Options{})
	conns := make([]*mqtt.Client, 10)
	for i := range conns {
		conns[i] = srv.NewClient(nil, "test", fmt.Sprint("c", i), true)
	}
	register := func(r *registry, pattern bool, text func(i int) string) {
		for i, cl := range conns {
			op := &engine.Op{Request: wire.Request{Verb: wire.VerbKeyNotify, Key: []byte(text(i)), Pattern: pattern}, Caller: &call{client: cl}}
			r.KeyNotify(op)
			if op.Result.Err != nil {
				t.Fatal(op.Result.Err)
			}
		}
	}
	for _, tt := range []struct {
		name  string
		setup func(r *registry)
	}{
		{"nothing registered", func(*registry) {}},
		{"other keys", func(r *registry) { register(r, false, func(i int) string { return fmt.Sprint("k/", i) }) }},
		{"patterns that do not match", func(r *registry) { register(r, true, func(i int) string { return fmt.Sprint("k/", i, "/*") }) }},
		{"a pattern with no literal start", func(r *registry) { register(r, true, func(int) string { return "*/nothing" }) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRegistry(NewMetrics(), func(*mqtt.Client, *packets.Packet) { t.Error("a notification was sent") })
			tt.setup(r)
			change := &store.Change{Key: "other/key", Value: []byte("v")}
			n := testing.AllocsPerRun(100, func() {
				if r.Changed(change) != nil {
					t.Fatal("a delivery for a change nobody watches")
				}
			})
			if n != 0 {
				t.Fatalf("%v allocations per change without recipients, want 0", n)
			}
		})
	}
}

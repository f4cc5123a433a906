package tuning

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		live, base uint64
		want       int
	}{
		{0, 0, 1600},              // an empty server collects after 64 MiB
		{1 << 20, 1 << 20, 1600},  // (the runtime's minimum goal, 4 MiB × GOGC/100)
		{16 << 20, 16 << 20, 400}, // 64 MiB of headroom
		{64 << 20, 64 << 20, 100},
		{200 << 20, 200 << 20, 32},
		{640 << 20, 640 << 20, 10}, // a tenth of the live data
		{4 << 30, 4 << 30, 10},     // and never less
		// 10,000 connections: the stacks count towards GOGC's base
		// but not towards the headroom.
		{16 << 20, 256 << 20, 25},
	} {
		if got := gcPercent(tt.live, tt.base); got != tt.want {
			t.Errorf("gcPercent(%d MiB, %d MiB) = %d, want %d", tt.live>>20, tt.base>>20, got, tt.want)
		}
	}
}

// TestGCTunerFollowsTheHeap checks the tuner's effect: after a collection
// that finds a larger heap, the heap goal is that heap plus the headroom,
// not the old proportion of it.
func TestGCTunerFollowsTheHeap(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("the tuner leaves the collector alone when GOGC or GOMEMLIMIT is set")
	}
	tuner := startGCTuner()
	defer tuner.Stop()

	// 96 MiB of live data in pointer-free blocks: a GOGC set for the
	// empty heap (thousands of percent) would let it grow to gigabytes.
	hold := make([][]byte, 96)
	for i := range hold {
		hold[i] = make([]byte, 1<<20)
	}
	// The tuner runs after each collection, on the goroutine that runs
	// cleanups, which may come late when collections follow each other
	// closely (as those the allocations above caused): the test collects
	// until the goal settles, but only as long as a tuner that reacted on
	// a timer instead would not reach it.
	samples := []metrics.Sample{{Name: metricHeapLive}, {Name: "/gc/heap/goal:bytes"}}
	for deadline := time.Now().Add(time.Second); ; {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		metrics.Read(samples)
		live, goal := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		want := live + gcMinHeadroom
		// GOGC is a whole percentage of its base: within 1% of that.
		if goal+2<<20 >= want && goal <= want+2<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heap goal %d MiB with %d MiB live, want about %d MiB", goal>>20, live>>20, want>>20)
		}
	}
	runtime.KeepAlive(hold)
}

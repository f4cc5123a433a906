package tuning

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// gcTuner keeps the garbage collector's headroom in proportion to what a
// store needs. Go's default (GOGC=100) lets the heap grow to twice the live
// data before collecting: for a store whose live data is mostly its keys,
// that doubles its memory, while with little data (and many requests) it
// collects far too often. The tuner lets the heap grow by 64 MiB or a
// tenth of the live data, whichever is more, instead. The keys live in
// slabs without pointers, so collecting a large heap costs little.
//
// GOGC is a proportion, of the heap the last collection left plus the
// goroutine stacks and globals it scanned, so it is set anew after every
// collection from what that collection found: a proportion computed for
// an older, smaller heap, or without the stacks of thousands of
// connections, multiplies what has grown since.
//
// When the server has gone quiet after a burst of work, it also hands the
// memory the heap no longer uses back to the operating system at once
// rather than over minutes. It leaves the collector alone when GOGC or
// GOMEMLIMIT is set.
type gcTuner struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex // serializes tune with Stop
	stopped bool
	samples []metrics.Sample
}

const (
	gcMinHeadroom  = 64 << 20
	gcHeadroomPart = 0.10
	gcQuietEvery   = 2 * time.Second
	// gcQuiet is what the server may allocate in gcQuietEvery and still
	// count as quiet.
	gcQuiet = 4 << 20
)

// The metrics GOGC is a proportion of (runtime/mgcpacer.go: the heap
// goal is the marked heap plus GOGC percent of heap, stacks and globals).
const (
	metricHeapLive    = "/gc/heap/live:bytes"
	metricStackScan   = "/gc/scan/stack:bytes"
	metricGlobalsScan = "/gc/scan/globals:bytes"
)

func startGCTuner() *gcTuner {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	t := &gcTuner{
		stop: make(chan struct{}),
		done: make(chan struct{}),
		samples: []metrics.Sample{
			{Name: metricHeapLive}, {Name: metricStackScan}, {Name: metricGlobalsScan},
		},
	}
	t.tune()
	t.armAfterNextGC()
	go t.releaseWhenQuiet()
	return t
}

// armAfterNextGC has tune run once the next collection has finished: the
// cleanup of an object nothing refers to runs after the collection that
// found it unreachable.
func (t *gcTuner) armAfterNextGC() {
	// Not a tiny allocation: those share a block, which may outlive them.
	sentinel := new([64]byte)
	runtime.AddCleanup(sentinel, func(t *gcTuner) {
		if t.tune() {
			t.armAfterNextGC()
		}
	}, t)
}

// tune sets GOGC for the heap the last collection left. It reports
// whether the tuner is still running.
func (t *gcTuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.samples)
	var v [3]uint64
	for i, s := range t.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	debug.SetGCPercent(gcPercent(v[0], v[0]+v[1]+v[2]))
	return true
}

// releaseWhenQuiet returns the heap's free memory to the operating system
// when the server stops allocating after a burst.
func (t *gcTuner) releaseWhenQuiet() {
	defer close(t.done)
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	tick := time.NewTicker(gcQuietEvery)
	defer tick.Stop()
	var allocs uint64
	released := true
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			now := sample[0].Value.Uint64()
			switch quiet := now-allocs < gcQuiet; {
			case !quiet:
				released = false
			case !released:
				debug.FreeOSMemory()
				released = true
			}
			allocs = now
		}
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
	}
}

// gcPercent is the GOGC that lets a heap of live bytes grow by its
// headroom before the next collection, where base is what GOGC is a
// proportion of (live plus the stacks and globals scanned).
func gcPercent(live, base uint64) int {
	// Below 4 MiB the runtime's minimum heap goal applies, which is 4 MiB
	// times GOGC/100 (runtime/mgcpacer.go, defaultHeapMinimum): a larger
	// GOGC for a tiny heap would raise that minimum past the headroom.
	base = max(base, 4<<20)
	headroom := max(float64(gcMinHeadroom), gcHeadroomPart*float64(live))
	return max(int(100*headroom/float64(base)), 10)
}

// Stop ends the tuner and gives the collector its default back.
func (t *gcTuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.stopped = true
	debug.SetGCPercent(100)
	t.mu.Unlock()
	close(t.stop)
	<-t.done
}

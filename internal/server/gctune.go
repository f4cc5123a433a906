package server

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcTuner keeps the garbage collector's headroom in proportion to what a
// store needs. Go's default (GOGC=100) lets the heap grow to twice the live
// data before collecting: for a store whose live data is mostly its keys,
// that doubles its memory, while with little data (and many requests) it
// collects far too often. The tuner lets the heap grow by 64 MiB or a
// tenth of the live data, whichever is more, instead. The keys live in
// slabs without pointers, so collecting a large heap costs little.
// When the server has gone quiet after a burst of work, it also hands the
// memory the heap no longer uses back to the operating system at once
// rather than over minutes. It leaves the collector alone when GOGC or
// GOMEMLIMIT is set.
type gcTuner struct {
	stop chan struct{}
	done chan struct{}
}

const (
	gcMinHeadroom  = 64 << 20
	gcHeadroomPart = 0.10
	gcTuneEvery    = 2 * time.Second
	// gcQuiet is what the server may allocate between two ticks and still
	// count as quiet.
	gcQuiet = 4 << 20
)

func startGCTuner() *gcTuner {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	t := &gcTuner{stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

func (t *gcTuner) run() {
	defer close(t.done)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	tick := time.NewTicker(gcTuneEvery)
	defer tick.Stop()
	last := -1
	var allocs uint64
	released := true
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if p := gcPercent(sample[0].Value.Uint64()); p != last {
				debug.SetGCPercent(p)
				last = p
			}
		}
		if sample[1].Value.Kind() == metrics.KindUint64 {
			now := sample[1].Value.Uint64()
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

// gcPercent is the GOGC for a live heap of live bytes.
func gcPercent(live uint64) int {
	if live < 1<<20 {
		live = 1 << 20 // an empty server: a GOGC of 100 times the minimum
	}
	headroom := max(float64(gcMinHeadroom), gcHeadroomPart*float64(live))
	return max(int(100*headroom/float64(live)), 10)
}

// Stop ends the tuner and gives the collector its default back.
func (t *gcTuner) Stop() {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	debug.SetGCPercent(100)
}

package bench

import (
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// maxLatency is the largest latency a histogram tracks; longer ones are
// recorded as this value (they are timeouts in any useful run).
const maxLatency = int64(time.Minute)

func newHistogram() *hdr.Histogram {
	// Nanoseconds with three significant digits: 0.1% precision from 1ns
	// to a minute, about 220 KB per histogram.
	return hdr.New(1, maxLatency, 3)
}

// histograms collects latencies from many connections. A histogram per
// connection would cost 220 KB each (a gigabyte at 4,096 connections), so
// connections buffer their samples and add them to one of a few shared
// histograms under its lock; the shards are merged for the report.
type histograms struct {
	shards []histShard
}

type histShard struct {
	mu sync.Mutex
	h  *hdr.Histogram // guarded by mu
	_  [64]byte       // keep shards' locks on separate cache lines
}

func newHistograms(n int) *histograms {
	hs := &histograms{shards: make([]histShard, n)}
	for i := range hs.shards {
		hs.shards[i].h = newHistogram()
	}
	return hs
}

// merged returns one histogram holding every sample recorded so far.
func (hs *histograms) merged() *hdr.Histogram {
	h := newHistogram()
	for i := range hs.shards {
		s := &hs.shards[i]
		s.mu.Lock()
		h.Merge(s.h)
		s.mu.Unlock()
	}
	return h
}

// recorder is one connection's buffer in front of a shard.
type recorder struct {
	shard *histShard
	buf   []int64
}

const recorderBatch = 256

func (hs *histograms) recorder(i int) recorder {
	return recorder{shard: &hs.shards[i%len(hs.shards)], buf: make([]int64, 0, recorderBatch)}
}

func (r *recorder) record(ns int64) {
	r.buf = append(r.buf, min(max(ns, 1), maxLatency))
	if len(r.buf) == cap(r.buf) {
		r.flush()
	}
}

func (r *recorder) flush() {
	if len(r.buf) == 0 {
		return
	}
	r.shard.mu.Lock()
	for _, v := range r.buf {
		_ = r.shard.h.RecordValue(v) // values are clamped to the range
	}
	r.shard.mu.Unlock()
	r.buf = r.buf[:0]
}

// counters are one connection's counts. They are merged after the
// connection's goroutine ended, so they need no locking.
type counters struct {
	// requests counts the responses received in the measured window.
	requests int64
	// outcomes counts them by verb and outcome.
	outcomes [numVerbs][numOutcomes]int64
	// sent counts every request sent, in and out of the window.
	sent     int64
	errors   [numErrKinds]int64
	samples  [numErrKinds]string // the first error of each kind
	timeouts int64
	// late counts responses that arrived after their request timed out.
	late     int64
	timeline []second
}

// second is one second of the run's timeline.
type second struct {
	Responses int64 `json:"responses"`
	Errors    int64 `json:"errors"`
	// MaxNS is the largest latency of the second's responses.
	MaxNS int64 `json:"max_ns"`
}

func newCounters(seconds int) counters {
	return counters{timeline: make([]second, seconds)}
}

func (c *counters) fail(k errKind, sample func() string, at int64) {
	c.errors[k]++
	if c.samples[k] == "" && sample != nil {
		c.samples[k] = sample()
	}
	if i := int(at / int64(time.Second)); i >= 0 && i < len(c.timeline) {
		c.timeline[i].Errors++
	}
}

func (c *counters) add(o *counters) {
	c.requests += o.requests
	for v := range c.outcomes {
		for k := range c.outcomes[v] {
			c.outcomes[v][k] += o.outcomes[v][k]
		}
	}
	c.sent += o.sent
	for k := range c.errors {
		c.errors[k] += o.errors[k]
		if c.samples[k] == "" {
			c.samples[k] = o.samples[k]
		}
	}
	c.timeouts += o.timeouts
	c.late += o.late
	if len(c.timeline) < len(o.timeline) {
		c.timeline = append(c.timeline, make([]second, len(o.timeline)-len(c.timeline))...)
	}
	for i, s := range o.timeline {
		t := &c.timeline[i]
		t.Responses += s.Responses
		t.Errors += s.Errors
		t.MaxNS = max(t.MaxNS, s.MaxNS)
	}
}

func (c *counters) totalErrors() int64 {
	var n int64
	for _, e := range c.errors {
		n += e
	}
	return n
}

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
	// perSecond has a histogram for each second of the run, for the
	// timeline's percentiles; nil when the run has no timeline.
	perSecond []histShard
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

// withSeconds adds a histogram for each of the first n seconds of the run.
// They have two significant digits (about 30 KB each): enough for a
// second's p99.
func (hs *histograms) withSeconds(n int) *histograms {
	hs.perSecond = make([]histShard, n)
	for i := range hs.perSecond {
		hs.perSecond[i].h = hdr.New(1, maxLatency, 2)
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

// fillTimeline sets the p99 of every second of timeline that has samples.
func (hs *histograms) fillTimeline(timeline []second) {
	for i := range min(len(timeline), len(hs.perSecond)) {
		s := &hs.perSecond[i]
		s.mu.Lock()
		if s.h.TotalCount() > 0 {
			timeline[i].P99NS = s.h.ValueAtQuantile(99)
		}
		s.mu.Unlock()
	}
}

// recorder is one connection's buffer in front of a shard.
type recorder struct {
	hs    *histograms
	shard *histShard
	buf   []latencySample
}

// latencySample is a latency and the second of the run it ended in; only
// measured ones go into the run's histogram, all into their second's.
type latencySample struct {
	ns       int64
	sec      int32
	measured bool
}

const recorderBatch = 256

func (hs *histograms) recorder(i int) recorder {
	return recorder{hs: hs, shard: &hs.shards[i%len(hs.shards)], buf: make([]latencySample, 0, recorderBatch)}
}

// record adds a latency of the measured window that has no second.
func (r *recorder) record(ns int64) { r.recordAt(ns, -1, true) }

// recordAt adds a latency that ended in second sec of the run; measured
// says whether it was in the measured window.
func (r *recorder) recordAt(ns int64, sec int, measured bool) {
	r.buf = append(r.buf, latencySample{ns: min(max(ns, 1), maxLatency), sec: int32(sec), measured: measured})
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
		if v.measured {
			_ = r.shard.h.RecordValue(v.ns) // values are clamped to the range
		}
	}
	r.shard.mu.Unlock()
	// A batch usually spans one second or two: one lock for each run of
	// samples of the same second.
	for i := 0; i < len(r.buf); {
		sec, j := r.buf[i].sec, i+1
		for j < len(r.buf) && r.buf[j].sec == sec {
			j++
		}
		if sec >= 0 && int(sec) < len(r.hs.perSecond) {
			s := &r.hs.perSecond[sec]
			s.mu.Lock()
			for _, v := range r.buf[i:j] {
				_ = s.h.RecordValue(v.ns)
			}
			s.mu.Unlock()
		}
		i = j
	}
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
	sent int64
	// applied counts the SETs answered +OK, in and out of the window.
	applied  int64
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
	// P99NS is their 99th percentile (two significant digits).
	P99NS int64 `json:"p99_ns,omitempty"`
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
	c.applied += o.applied
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

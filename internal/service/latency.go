package service

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/wire"
)

// Latency is dss_request_duration_seconds, the time from a request's
// arrival to its response being handed to the broker, by verb: the same
// series whichever front end answers.
type Latency struct {
	hist *prometheus.HistogramVec
	// byVerb caches hist's series per verb (index: wire.Verb), so that an
	// observation takes no lookup by label.
	byVerb [32]atomic.Pointer[prometheus.Observer]
}

// NewLatency returns an unregistered histogram.
func NewLatency() *Latency {
	return &Latency{hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dss_request_duration_seconds",
		Help: "Time from a state store request's arrival to its response, by verb: the store's work, the wait for the journal's fsync (--fsync always) or, in a cluster, for a majority.",
		// 50 µs to about 3.3 s.
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 17),
	}, []string{"verb"})}
}

// Collector returns the histogram, for registration.
func (l *Latency) Collector() prometheus.Collector { return l.hist }

// Observe records a request's latency under its verb ("INVALID" for a
// request that did not parse).
func (l *Latency) Observe(v wire.Verb, d time.Duration) {
	if int(v) >= len(l.byVerb) {
		l.hist.WithLabelValues(v.String()).Observe(d.Seconds())
		return
	}
	o := l.byVerb[v].Load()
	if o == nil {
		name := v.String()
		if v == 0 {
			name = "INVALID"
		}
		obs := l.hist.WithLabelValues(name)
		o = &obs
		l.byVerb[v].Store(o)
	}
	(*o).Observe(d.Seconds())
}

package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/journal"
)

// journalMetrics are the histograms of the journal's disk work.
type journalMetrics struct {
	write, fsync, snapshot prometheus.Histogram
}

func newJournalMetrics() *journalMetrics {
	// 50 µs to about 3.3 s: an fsync on a fast SSD to a struggling disk.
	disk := prometheus.ExponentialBuckets(50e-6, 2, 17)
	return &journalMetrics{
		write: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dss_journal_write_seconds", Help: "Time to write one batch of appended records to the journal, or a cluster node's Raft log (without the fsync).", Buckets: disk,
		}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dss_journal_fsync_seconds", Help: "Time to force the journal, or a cluster node's Raft log, to stable storage (fdatasync): once per batch with --fsync always, once a second with everysec.", Buckets: disk,
		}),
		snapshot: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dss_snapshot_duration_seconds", Help: "Time to write one snapshot of a single node's store, from its start to the removal of the files it replaces.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14), // 10 ms to about 80 s
		}),
	}
}

// timings feeds the histograms from the journal.
func (m *journalMetrics) timings() *journal.Timings {
	return &journal.Timings{
		Write:    func(d time.Duration) { m.write.Observe(d.Seconds()) },
		Fsync:    func(d time.Duration) { m.fsync.Observe(d.Seconds()) },
		Snapshot: func(d time.Duration) { m.snapshot.Observe(d.Seconds()) },
	}
}

func (m *journalMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.write, m.fsync, m.snapshot}
}

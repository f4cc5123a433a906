package journal

import "time"

// Timings receives how long the journal's disk work takes, for metrics;
// a nil field is not called. The functions run on the goroutine that did
// the work (the engine's flusher, the once-a-second syncer, the snapshot
// writer) and must not block.
type Timings struct {
	// Write is one Flush's write of the appended records (without the
	// fsync).
	Write func(time.Duration)
	// Fsync is one forcing of the journal to stable storage: after a
	// Flush with FsyncAlways, or once a second with FsyncEverySec.
	Fsync func(time.Duration)
	// Snapshot is one snapshot, from BeginSnapshot to the end of Finish.
	Snapshot func(time.Duration)
}

// timed calls record, when not nil, with the time since start.
func timed(record func(time.Duration), start time.Time) {
	if record != nil {
		record(time.Since(start))
	}
}

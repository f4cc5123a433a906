package tuning

import (
	"log/slog"
	"os"
	"runtime"
)

// ensureTwoProcs runs Go code on at least two threads at a time, even on
// one CPU (unless GOMAXPROCS is set): with one, every fsync of the journal
// holds the only one, and nothing else runs until the runtime notices the
// thread is blocked. On one CPU, SET throughput with --fsync always is
// several times higher this way. (Otherwise one thread is better: two
// threads time-sliced on one CPU double the tail latency, and the fsync
// of everysec comes once a second only.)
func ensureTwoProcs(log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) >= 2 {
		return
	}
	runtime.GOMAXPROCS(2)
	log.Debug("one CPU: running Go code on two threads", "gomaxprocs", 2)
}

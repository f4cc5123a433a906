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
//
// A node of a cluster keeps one thread: its writes wait for the Raft
// log, whose fsyncs batch the writes of all its clients, so one thread
// serves them as fast (64 SET connections to a leader, three nodes on
// one CPU, --fsync always: the same requests/s and CPU per request);
// and a second thread on one CPU lets the connections' write loops run
// at each message they are handed, one write per message and
// subscriber, where one thread writes all that waits when it gets to
// them: a QoS 1 message to 100 subscribers on another node cost the
// subscribers' node about twice the CPU.
// twoProcs reports whether the server is to run Go code on two threads
// on one CPU: a single node whose journal is synced before each response.
func (o Options) twoProcs() bool { return o.SyncEveryWrite && !o.ClusterNode }

func ensureTwoProcs(log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) >= 2 {
		return
	}
	runtime.GOMAXPROCS(2)
	log.Debug("one CPU: running Go code on two threads", "gomaxprocs", 2)
}

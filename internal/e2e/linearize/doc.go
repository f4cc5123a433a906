// Package linearize proves that the state store is linearizable while its
// processes crash, pause and lose their network, the way etcd's robustness
// tests and Jepsen do. The package has no code of its own: everything is in
// its tests.
//
// # What it proves
//
// Concurrent clients run SET (plain, NX, NEX, with and without PX), GET,
// DEL and VDEL on a few keys through real MQTT 5 connections to real dss
// processes, each client through a different node. Every call is recorded
// with the time it was invoked and the time it completed and what it
// returned; a write whose outcome the client cannot know (it timed out, or
// its connection dropped) is recorded as unknown, and may or may not have
// taken effect. Meanwhile faults are injected: SIGKILL and restart of a node
// (the leader or a follower in a cluster), SIGSTOP and SIGCONT, and, in a
// cluster, network partitions, one-way partitions and delays between the
// nodes through TCP proxies the test controls.
//
// Each round's history is checked with porcupine against a model of the
// protocol (PROTOCOL.md section 4): values, NX and NEX, VDEL's three
// outcomes, DEL's count, expiry after PX, and versions: every version a
// response carries is the version of the value it is about, and a key's
// versions grow strictly in the order the writes took effect. A history that
// is not linearizable fails the test, and so does one the checker could not
// decide in its time limit; the failing history is written as porcupine's
// HTML visualisation and the test names the file.
//
// # Running it
//
// The normal suite runs a few rounds of each fault:
//
//	go test ./internal/e2e/linearize/
//
// The long version runs hundreds of fault rounds and prints a summary
// (rounds, operations, faults of each kind, violations, undecided checks):
//
//	DSS_LONG=1 go test -timeout 0 -v -run . ./internal/e2e/linearize/
//
// -linearize.rounds=N sets the number of rounds of each test and
// -linearize.seed=S replays a seed printed by an earlier run (the faults
// and requests are drawn from it; the timing of real processes is not);
// both go after the package:
//
//	go test -v ./internal/e2e/linearize/ -linearize.rounds=50 -linearize.seed=S
//
// The tests are skipped on Windows, which has no SIGSTOP and SIGCONT to
// pause a process with.
//
// The cluster tests run only against a binary whose serve command accepts
// --cluster-listen and --peers; otherwise they are skipped with a message
// that says so.
package linearize

// Package e2e holds the tests that run the dss binary as a separate
// process: crashes with SIGKILL, graceful shutdown with SIGTERM, restarts
// on the same data directory, and clusters of three processes on random
// loopback ports (publish/subscribe across the nodes in pubsub_*_test.go).
// The package has no code of its own.
//
// The tests build dss once; DSS_E2E_BIN=path runs them against a dss
// built elsewhere instead (another commit's), and DSS_E2E_RACE=1 (or
// DSS_LONG=1) has every cluster run a build with the race detector.
//
// The tests are skipped on Windows, which cannot send another process
// the signals (SIGTERM, SIGHUP) that stop dss or make it reload.
package e2e

// Package e2e holds the tests that run the dss binary as a separate
// process: crashes with SIGKILL, graceful shutdown with SIGTERM, restarts
// on the same data directory. The package has no code of its own.
//
// The tests are skipped on Windows, which cannot send another process
// the signals (SIGTERM, SIGHUP) that stop dss or make it reload.
package e2e

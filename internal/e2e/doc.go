// Package e2e holds the tests that run the dss binary as a separate
// process: crashes with SIGKILL, graceful shutdown with SIGTERM, restarts
// on the same data directory. The package has no code of its own.
package e2e

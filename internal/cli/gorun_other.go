//go:build !linux

package cli

// stopWithGoRun does nothing outside Linux, which alone has a signal for
// a parent's death.
func stopWithGoRun() {}

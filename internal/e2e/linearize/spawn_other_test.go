//go:build !linux

package linearize

import "os/exec"

// startProcess starts cmd. Outside Linux a process may outlive a test
// binary that panics; the test's cleanup kills it otherwise.
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }

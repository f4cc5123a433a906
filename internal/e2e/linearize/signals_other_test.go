//go:build !unix

package linearize

import "syscall"

// sigStop and sigCont do not exist outside Unix, where TestMain skips the
// package: no signal pauses a process there.
const (
	sigStop = syscall.Signal(-1)
	sigCont = syscall.Signal(-2)
)

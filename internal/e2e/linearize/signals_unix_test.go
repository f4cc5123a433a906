//go:build unix

package linearize

import "syscall"

// sigStop and sigCont pause a node and let it go on.
const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// SPDX-License-Identifier: MIT

//go:build !linux

package mqtt

import "errors"

// ReadLoopsAvailable reports whether Options.ReadLoops can start read
// loops on this system: they need Linux's epoll.
const ReadLoopsAvailable = false

// errReadLoopsUnavailable is the error of Options.ReadLoops on a system
// without them.
var errReadLoopsUnavailable = errors.New("read loops are not available on this system")

// readLoop is not available outside Linux: every connection is read by
// its own goroutine.
type readLoop struct{}

func newReadLoop(int) (*readLoop, error) { return nil, errReadLoopsUnavailable }

func (l *readLoop) add(*Client) error { return errReadLoopsUnavailable }

func (l *readLoop) takeBack(*Client) bool { return false }

func (l *readLoop) close() {}

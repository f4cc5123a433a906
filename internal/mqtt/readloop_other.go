// SPDX-License-Identifier: MIT

//go:build !linux

package mqtt

import "errors"

// errReadLoopsUnavailable is the error of Options.ReadLoops on a system
// without them.
var errReadLoopsUnavailable = errors.New("read loops are not available on this system")

// readLoop is not available outside Linux: every connection is read by
// its own goroutine.
type readLoop struct{}

func newReadLoop(int) (*readLoop, error) { return nil, errReadLoopsUnavailable }

func (l *readLoop) add(*Client) error { return errReadLoopsUnavailable }

func (l *readLoop) remove(*Client) {}

func (l *readLoop) close() {}

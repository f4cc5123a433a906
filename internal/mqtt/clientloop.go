// SPDX-License-Identifier: MIT

package mqtt

import (
	"bufio"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/readloop"
)

// ReadLoopsAvailable reports whether Options.ReadLoops can start read
// loops on this system (Linux: epoll).
const ReadLoopsAvailable = readloop.Available

// readLoop is a read loop of the server's (package readloop) and what
// the turns of its connections share: its buffers and its round of
// writes, used on the loop's goroutine only.
type readLoop struct {
	*readloop.Loop[*Client]
	bufs loopBuffers

	// handedBack counts the turns that ended with the connection going
	// back to a goroutine of its own: the packets the loop does not
	// handle.
	handedBack atomic.Int64
}

// newReadLoop starts a read loop whose connections read with buffers of
// size bytes.
func newReadLoop(size int) (*readLoop, error) {
	l := &readLoop{}
	l.bufs.reader = bufio.NewReaderSize(nil, size)
	loop, err := readloop.New[*Client](l)
	if err != nil {
		return nil, err
	}
	l.Loop = loop
	return l, nil
}

// Turn is cl's turn (see Client.turn); a panic on the way ends the
// connection with ErrConnectionPanicked instead of the process (dss).
func (l *readLoop) Turn(cl *Client, now int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = cl.ops.faults.panicked(cl.ops.log, cl.ops.faultLog, cl, r)
		}
	}()
	return cl.turn(&l.bufs, now)
}

// Left continues cl on a goroutine of its own: a packet the loop does
// not handle (errHandBack), or the end of the connection (another error,
// or nil when the loop closed and the client is Closed).
func (l *readLoop) Left(cl *Client, err error) {
	if err == errHandBack {
		l.handedBack.Add(1)
		err = nil
	}
	cl.ops.workers.resume(cl, err)
}

// RoundDone writes what the round's turns queued for subscribers.
func (l *readLoop) RoundDone() { l.bufs.round.flush() }

// add has the loop read cl's connection until it is taken back.
func (l *readLoop) add(cl *Client) error {
	return l.Add(&cl.Net.loop.member, cl.Net.raw, cl)
}

// takeBack stops the loop reading cl's connection, after its turn if
// one is under way, and reports whether the loop was reading it: the
// caller then continues the connection. Of the loop, the connection's
// timer and the client's end, the first to take it back does.
func (l *readLoop) takeBack(cl *Client) bool {
	return l.TakeBack(&cl.Net.loop.member)
}

// SPDX-License-Identifier: MIT

package mqtt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/readloop"
)

// dss: with a goroutine blocked in a read on every connection, each
// request wakes its connection's goroutine, whose stack, buffers and
// state are out of the cache when thousands of connections take turns:
// at 4,096 busy connections a request cost twice the CPU it costs at 64.
// With Options.ReadLoops, a connection whose reader has nothing buffered
// is handed to a read loop, which waits for all its connections at once
// (epoll) and reads and handles the acknowledgements, publishes and
// state store requests (the packets handlesFast admits) of each that has
// data, on its one stack, as the reader goroutine would
// (Client.readPacket), writing without waiting. Every other packet, one
// larger than the read buffer, an error, a connection with writes
// waiting, a publisher that must wait for a congested subscriber
// (backpressure.go), or a connection the server ends, goes back to the
// connection's reader goroutine, which waits meanwhile and handles it.

// errWouldBlock is what a connection's reader returns to the read loop
// once it has made its one read of a turn.
var errWouldBlock = errors.New("no more data ready")

// errHandBack ends a read loop's turn on a connection that goes back to
// its reader goroutine.
var errHandBack = errors.New("handed back to the reader")

// connReader reads a connection for a bufio.Reader: the bytes a read
// loop's turn left (pending) first; then from the connection's reader
// goroutine, waiting for data, or from a read loop, once without waiting.
type connReader struct {
	conn    net.Conn
	raw     syscall.RawConn
	pending []byte
	turn    bool // a read loop reads: one read without waiting, then errWouldBlock
	read    bool // the read of the turn was made
	// readFD makes the read of a turn through raw: readOnce, bound when
	// the connection is made, with its buffer and results here, so that
	// a read allocates no closure.
	readFD func(fd uintptr) bool
	p      []byte
	n      int
	err    error

	// dss: packetTimeout is Options.PacketReadTimeout while a packet is
	// being read (its first byte came): each read from the connection
	// must then bring a byte within it, or the keepalive's deadline
	// (*keepalive) if that is sooner. packetDeadline says that the read
	// deadline is one of those, to be put back after the packet.
	packetTimeout  time.Duration
	packetDeadline bool
	keepalive      *time.Time
	// stillSending, once the connection is established, is asked when a
	// read's deadline passed: it reports whether the peer's bytes wait
	// in the socket after all (see Client.stillSending); the read is
	// then made again.
	stillSending func() bool
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[:copy(r.pending, r.pending[n:])]
		return n, nil
	}
	if !r.turn {
		return r.readConn(p)
	}
	if r.read {
		return 0, errWouldBlock
	}
	r.read = true
	r.p = p
	rerr := r.raw.Read(r.readFD)
	n, err := r.n, r.err
	r.p, r.err = nil, nil
	if rerr != nil {
		return 0, rerr
	}
	switch {
	case err == syscall.EAGAIN:
		return 0, errWouldBlock
	case err != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: r.conn.LocalAddr(), Addr: r.conn.RemoteAddr(), Err: os.NewSyscallError("read", err)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readConn reads from the connection, waiting, by the reader goroutine.
func (r *connReader) readConn(p []byte) (int, error) {
	for {
		if r.packetTimeout > 0 {
			d := time.Now().Add(r.packetTimeout)
			if ka := *r.keepalive; !ka.IsZero() && ka.Before(d) {
				d = ka
			}
			_ = r.conn.SetReadDeadline(d)
			r.packetDeadline = true
		}
		n, err := r.conn.Read(p)
		if n > 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if r.stillSending == nil || !r.stillSending() {
			if r.packetTimeout > 0 {
				return n, fmt.Errorf("%w (%w)", errPacketStalled, err)
			}
			return n, err
		}
	}
}

// errPacketStalled ends a connection whose packet stopped arriving for
// Options.PacketReadTimeout (or, with a keepalive, until its deadline).
var errPacketStalled = errors.New("the packet stopped arriving")

// loopBuffers are a read loop's buffers, which the connection it gives a
// turn uses instead of its own: with thousands of connections taking
// turns, a connection's own buffers are out of the cache, the loop's are
// not.
type loopBuffers struct {
	// round is the loop's round of writes (writeRound).
	round        writeRound
	reader       *bufio.Reader
	consumedBuf  []byte
	consumedUser []packets.UserProperty
	// The buffers of the connection that has them, until giveBack.
	own     *bufio.Reader
	ownBuf  []byte
	ownUser []packets.UserProperty
}

// lend has cl use b's buffers, its own reader holding nothing, until
// giveBack.
func (b *loopBuffers) lend(cl *Client) {
	b.own, b.ownBuf, b.ownUser = cl.Net.bconn, cl.Net.consumedBuf, cl.Net.consumedUser
	b.reader.Reset(&cl.Net.src)
	cl.Net.bconn, cl.Net.consumedBuf, cl.Net.consumedUser = b.reader, b.consumedBuf, b.consumedUser
}

// giveBack takes b's buffers back from cl, keeping what b's reader holds
// for the connection's next read.
func (b *loopBuffers) giveBack(cl *Client) {
	if n := b.reader.Buffered(); n > 0 {
		left, _ := b.reader.Peek(n)
		cl.Net.src.pending = append(cl.Net.src.pending, left...)
	}
	b.consumedBuf, b.consumedUser = cl.Net.consumedBuf, cl.Net.consumedUser
	cl.Net.bconn, cl.Net.consumedBuf, cl.Net.consumedUser = b.own, b.ownBuf, b.ownUser
	b.own, b.ownBuf, b.ownUser = nil, nil, nil
}

// readers holds the buffered readers of connections parked in a read
// loop, which need none until one is taken back.
var readers sync.Pool

// readBufferSize is the size of a connection's buffered reader:
// Options.ClientNetReadBufferSize, as bufio makes it.
func readBufferSize(o *Options) int { return max(o.ClientNetReadBufferSize, 16) }

// monoNow is readloop.Now: the keepalive of a connection in a read loop
// is measured with the monotonic clock, as the runtime measures a read
// deadline, so that a step of the wall clock (a time sync) neither ends
// connections that were busy nor keeps idle ones.
func monoNow() int64 { return readloop.Now() }

// loopState is what a connection shares with the read loop that reads it
// while it is parked.
type loopState struct {
	loop    *readLoop   // set once, before the connection is read
	refused atomic.Bool // the loop could not take the connection, which keeps its goroutine
	member  readloop.Member
	serving atomic.Bool
	// round is the loop's round during the connection's turn, nil
	// otherwise: the publishes it routes leave the subscribers' writes to
	// the round (writeRound). Set and read on the loop's goroutine.
	round *writeRound
	// parked is set while the connection has no reader goroutine: from
	// before it is added to the loop until the goroutine that took it
	// back (resume) runs.
	parked atomic.Bool
	// timer watches the keepalive and the packet timeout of the parked
	// connection (parkExpired); made at the first park that needs it.
	timer *time.Timer
	read  atomic.Int64 // monoNow of the loop's last read, for the keepalive
	// partial is the monoNow of the last bytes of a packet whose rest
	// has not come, which the loop holds; 0 when it holds none. For
	// Options.PacketReadTimeout. dss.
	partial atomic.Int64
	// ownAcks counts the acknowledgements the connection's turn queued
	// for it (ackAfterRound), which do not keep the turn from handling
	// its next publish. Used on the loop's goroutine only.
	ownAcks int32
}

// serving reports whether a read loop is handling a packet of the
// client, so that nothing may wait for the connection.
func (cl *Client) serving() bool {
	return cl.Net.loop.serving.Load()
}

// parks reports whether the reader goroutine leaves the connection to a
// read loop now: one is available and nothing is buffered or waiting
// to be written.
//
// dss: a connection with writes queued when it read its last packet
// stays with its goroutine, waiting for its next packet (a PINGREQ at
// the latest), and parks then: the loop would hand back every request
// of such a connection, to be answered by a goroutine that waits for the
// connection to take the answer.
func (cl *Client) parks() bool {
	return cl.Net.loop.loop != nil && !cl.Net.loop.refused.Load() && !cl.readHeld() && cl.Net.bconn.Buffered() == 0 &&
		len(cl.Net.src.pending) == 0 && atomic.LoadInt32(&cl.State.outboundQty) == 0
}

// errParked ends a reader goroutine that parked its connection in a read
// loop: the connection goes on, on another goroutine once it has
// something to read (see park).
var errParked = errors.New("parked in a read loop")

// park hands the connection to its read loop, and reports whether it
// did. The reader goroutine then ends (Read returns errParked): an idle
// connection holds no goroutine, no stack and no read buffer. It is
// taken back, and read on a new goroutine (ops.resume), by the first of:
// the loop, when a packet comes that it does not handle itself or the
// connection ends; the keepalive's or the packet timeout's timer
// (parkExpired); the client's end (Stop, see leaveLoop).
func (cl *Client) park() bool {
	ls := &cl.Net.loop
	if !cl.Net.deadlineAt.IsZero() {
		// The loop does not move the deadline, and the writer's writes
		// must not fail for it; the keepalive is watched by the timer.
		cl.Net.deadlineAt, cl.Net.deadlineSet = time.Time{}, false
		_ = cl.Net.Conn.SetDeadline(time.Time{})
	}
	ls.read.Store(monoNow())
	ls.partial.Store(0) // nothing is buffered: no packet begun
	// The loop's turns read with its own reader: this one goes back to
	// the pool until the connection is taken back.
	cl.Net.bconn.Reset(nil)
	readers.Put(cl.Net.bconn)
	cl.Net.bconn = nil
	ls.parked.Store(true)
	full := keepaliveTimeout(cl.State.Keepalive)
	stall := cl.ops.options.PacketReadTimeout
	if first := nextCheck(full, stall, full, stall); first > 0 {
		if ls.timer == nil {
			// Made stopped, and set going once ls.timer is set: the
			// callback reads it.
			ls.timer = time.AfterFunc(math.MaxInt64, cl.parkExpired)
		}
		ls.timer.Reset(first)
	}
	if err := ls.loop.add(cl); err != nil {
		cl.ops.log.Debug("connection read by its own goroutine", "error", err, "client", cl.ID)
		ls.refused.Store(true)
		cl.unparked()
		return false
	}
	// A Stop that came before parked was set did not see it (leaveLoop):
	// the connection is taken back here, not left in the loop for good.
	if cl.Closed() && ls.loop.takeBack(cl) {
		cl.unparked()
		return false
	}
	return true
}

// unparked readies the connection to be read by its goroutine again,
// once taken back from its read loop.
func (cl *Client) unparked() {
	ls := &cl.Net.loop
	if ls.timer != nil {
		ls.timer.Stop()
	}
	size := readBufferSize(cl.ops.options)
	r, _ := readers.Get().(*bufio.Reader)
	if r == nil || r.Size() != size {
		r = bufio.NewReaderSize(nil, size)
	}
	r.Reset(&cl.Net.src)
	cl.Net.bconn = r
	ls.parked.Store(false)
}

// resumeParked continues the connection taken back from its read loop
// on the calling goroutine, which the loop or a timer started: err is
// what ended the connection, if anything did.
func (cl *Client) resumeParked(err error) {
	cl.unparked()
	cl.ops.resume(cl, err)
}

// leaveLoop takes a parked connection out of its read loop and ends it,
// on a goroutine of its own: the client was stopped (called as it is
// marked Closed). The caller may be a read loop's turn, which holds a
// connection's lock, so it does not wait for any itself.
func (cl *Client) leaveLoop() {
	if !cl.Net.loop.parked.Load() {
		return
	}
	go func() {
		if cl.Net.loop.loop.takeBack(cl) {
			cl.resumeParked(nil) // the reader sees the client Closed
		}
	}()
}

// parkExpired runs when the parked connection's keepalive or packet
// timeout may have passed: it ends the connection if one did, and
// otherwise waits for the next one.
func (cl *Client) parkExpired() {
	ls := &cl.Net.loop
	if !ls.parked.Load() {
		return // taken back meanwhile
	}
	full := keepaliveTimeout(cl.State.Keepalive)
	stall := cl.ops.options.PacketReadTimeout
	now := monoNow()
	// dss: a packet whose start the loop holds must be whole within the
	// packet timeout, whatever the keepalive.
	held := time.Duration(0)
	if since := ls.partial.Load(); since != 0 {
		held = time.Duration(now - since)
	}
	var err error
	idle := time.Duration(now - ls.read.Load())
	switch {
	case stall > 0 && held >= stall:
		err = errPacketStalled
	case full > 0 && idle >= full:
		// dss: bytes in the socket came in time, if the loop did not
		// read them yet (the server was stopped or starved): the
		// client is not idle.
		if !socketReadable(cl.Net.Conn) {
			err = os.ErrDeadlineExceeded
			break
		}
		ls.read.Store(now)
		idle = 0
	}
	if err == nil {
		ls.timer.Reset(nextCheck(full, stall, full-idle, stall-held))
		return
	}
	if ls.loop.takeBack(cl) {
		cl.resumeParked(&net.OpError{Op: "read", Net: "tcp", Source: cl.Net.Conn.LocalAddr(), Addr: cl.Net.Conn.RemoteAddr(), Err: err})
	}
}

// nextCheck returns when the parked connection's keepalive (full, 0 for
// none) or packet timeout (stall, 0 for none) is next to be looked at:
// the sooner of keepaliveLeft and stallLeft among those that apply.
func nextCheck(full, stall, keepaliveLeft, stallLeft time.Duration) time.Duration {
	switch {
	case full > 0 && stall > 0:
		return min(keepaliveLeft, stallLeft)
	case full > 0:
		return keepaliveLeft
	}
	return stallLeft
}

// turn is a read loop's turn on the connection, which has data at now
// (monoNow, for the keepalive): it reads
// once and handles the complete packets read, as long as they are ones
// handlesFast admits. It returns nil to wait for more data,
// errHandBack to hand the connection back to its reader goroutine, or the
// error that ends the connection.
func (cl *Client) turn(bufs *loopBuffers, now int64) error {
	bufs.lend(cl)
	defer bufs.giveBack(cl)
	src := &cl.Net.src
	src.turn, src.read = true, false
	cl.Net.loop.serving.Store(true)
	cl.Net.loop.round = &bufs.round
	defer func() {
		src.turn = false
		cl.Net.loop.round = nil
		cl.Net.loop.serving.Store(false)
	}()
	cl.Net.loop.read.Store(now)
	cl.Net.loop.ownAcks = 0
	for {
		if cl.Closed() || cl.readHeld() || cl.State.flow.slowedBy.Load() != nil {
			return errHandBack // a held or slowed connection waits on its goroutine
		}
		buffered := cl.Net.bconn.Buffered()
		b, _ := cl.Net.bconn.Peek(buffered)
		size, header := packetSize(b)
		switch {
		case size < 0 || size > cl.Net.bconn.Size():
			return errHandBack // malformed, or larger than the buffer: read as before
		case size == 0 || size > buffered:
			if src.read {
				cl.holdsPartial(buffered > 0, now)
				return nil
			}
			if _, err := cl.Net.bconn.Peek(buffered + 1); err != nil && err != errWouldBlock {
				return err
			}
			if cl.Net.bconn.Buffered() == buffered {
				return nil
			}
			continue
		}
		if !cl.handlesFast(b[:size], header) {
			return errHandBack
		}
		var fh packets.FixedHeader
		if err := cl.ReadFixedHeader(&fh); err != nil {
			return err
		}
		if err := cl.readPacket(&fh, cl.ops.receive); err != nil {
			return err
		}
	}
}

// holdsPartial notes whether the read loop holds the start of a packet
// of cl's (partial) after a turn at now, which read more of it: the
// packet timeout counts from the last byte that came, as it does for a
// reader goroutine.
func (cl *Client) holdsPartial(partial bool, now int64) {
	if !partial {
		now = 0
	}
	cl.Net.loop.partial.Store(now)
}

// handlesFast reports whether the packet pk, whose fixed header is
// header bytes long, is one a read loop handles, as it is handled without
// waiting for the connection: a PUBACK when no message waits for the
// send quota it frees; a publish of QoS 0 or 1, or one to
// Options.ConsumedTopic, when none of the connection's own writes is
// waiting (a client that does not read what it is sent is not read
// from); a SUBSCRIBE or UNSUBSCRIBE under the same condition, with
// Options.SubscribeOnLoop. A QoS 2 publish, with its PUBREC and PUBREL,
// goes to the goroutine.
func (cl *Client) handlesFast(pk []byte, header int) bool {
	if cl.ops.receive == nil {
		return false
	}
	switch pk[0] >> 4 {
	case packets.Puback:
		return !cl.State.Inflight.HasParked()
	case packets.Publish:
		if atomic.LoadInt32(&cl.State.outboundQty) != cl.Net.loop.ownAcks {
			return false // the connection's own writes wait: it waits too
		}
		if qos := pk[0] >> 1 & 3; qos <= 1 {
			return true
		}
		topic := cl.ops.options.ConsumedTopic
		return topic != "" && len(pk)-header <= maxConsumedBuffer &&
			publishesTo(pk[header:], topic)
	case packets.Subscribe, packets.Unsubscribe:
		return cl.ops.options.SubscribeOnLoop && atomic.LoadInt32(&cl.State.outboundQty) == cl.Net.loop.ownAcks
	}
	return false
}

// packetSize returns the size of the packet at the start of b and the
// size of its fixed header; 0 if b does not hold the fixed header whole,
// -1 if it is malformed.
func packetSize(b []byte) (size, header int) {
	remaining, shift := 0, 0
	for i := 1; i < len(b) && i <= 4; i++ {
		remaining |= int(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return 1 + i + remaining, 1 + i
		}
		shift += 7
	}
	if len(b) > 4 {
		return -1, 0
	}
	return 0, 0
}

// SPDX-License-Identifier: MIT

package mqtt

import (
	"errors"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/mempool"
	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: a goroutine that has packets for a client writes them itself when
// the client's write loop has nothing to do, rather than waking the write
// loop for them: a state store whose results wait for the journal answers
// every request from one goroutine, and waking the requester's write loop
// for each answer was a tenth of the CPU of a request.

// WriteNow writes pks to the client at once, in one write, when nothing is
// queued for its write loop or being written by it, and reports whether
// it did; otherwise it leaves them to the caller, which queues them so
// that they go out in order.
//
// With wait, it blocks until the connection has taken every byte (the
// caller is the client's own reader: a client that does not read its
// answers is not read from either). Without, it never blocks: it writes
// what the connection takes without waiting and queues the rest, already
// encoded, for the write loop; and it leaves pks to the caller when the
// connection offers no way to write without waiting (TLS, websockets) or
// another goroutine is writing to it.
//
// pks are encoded before WriteNow returns; nothing of them is kept.
func (cl *Client) WriteNow(wait bool, pks ...*packets.Packet) (bool, error) {
	if cl.Closed() {
		return false, ErrConnectionClosed
	}
	if cl.Net.Conn == nil {
		return true, nil // as Write: nowhere to write
	}
	if cl.serving() {
		wait = false // a read loop waits for no connection
	}
	if !wait && cl.Net.raw == nil {
		return false, nil
	}
	if !cl.State.outbound.claim() {
		return false, nil
	}
	if wait {
		err := cl.writePacketsWaiting(pks)
		cl.giveBackToken(nil)
		return true, err
	}
	if !cl.Net.writeMu.TryLock() {
		cl.giveBackToken(nil)
		return false, nil
	}
	rest, err := cl.writeNoWait(pks)
	cl.Net.writeMu.Unlock()
	if len(rest) > 0 {
		atomic.AddInt32(&cl.State.outboundQty, 1)
	}
	cl.giveBackToken(rest)
	return true, err
}

// writeNoWait encodes pks and writes them as far as the connection takes
// them without waiting. It returns a copy of the bytes it did not write.
// The caller holds the connection's write lock and the queue's write
// token.
func (cl *Client) writeNoWait(pks []*packets.Packet) ([]byte, error) {
	buf := mempool.GetBuffer()
	defer mempool.PutBuffer(buf)
	sizes := make([]int, len(pks))
	encodeErr := cl.encodePackets(pks, buf, sizes)
	rest, err := cl.writeBytesNoWait(buf.Bytes())
	if err != nil {
		return nil, err
	}
	cl.packetsSent(pks, sizes)
	return rest, encodeErr
}

// writeBytesNoWait writes data as far as the connection takes it without
// waiting, and returns a copy of the bytes it did not write. The caller
// holds the connection's write lock and the queue's write token.
func (cl *Client) writeBytesNoWait(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, nil
	}
	w := &cl.Net.writer
	w.data, w.n, w.err = data, 0, nil
	err := cl.Net.raw.Write(w.writeFD)
	for err != nil && cl.lateWrite(err) {
		err = cl.Net.raw.Write(w.writeFD) // dss: see writeConn
	}
	n := w.n
	if err == nil {
		err = w.err
	}
	w.data, w.err = nil, nil
	if err != nil {
		return nil, err
	}
	atomic.AddInt64(&cl.ops.info.BytesSent, int64(len(data)))
	if n == len(data) {
		return nil, nil
	}
	return append([]byte(nil), data[n:]...), nil
}

// fdWriter writes to a descriptor as far as it takes data without
// waiting, for syscall.RawConn.Write: writeFD is writeNoWait, bound when
// the connection is made, with its data and results here, so that a
// write allocates no closure. Used under the connection's write lock.
type fdWriter struct {
	writeFD func(fd uintptr) bool
	data    []byte
	n       int // bytes of data written
	err     error
}

// writeRaw writes bytes WriteNow could not write at once, on the write
// loop.
func (cl *Client) writeRaw(b []byte) {
	if cl.Closed() || cl.Net.Conn == nil {
		return
	}
	cl.Net.writeMu.Lock()
	_, err := cl.writeConn(b)
	cl.Net.writeMu.Unlock()
	if err != nil && !errors.Is(err, ErrConnectionClosed) {
		cl.ops.log.Debug("failed writing packets", "error", err, "client", cl.ID)
	}
}

// writeFromLoop writes pks for a read loop, which must not wait for the
// connection: as WriteNow without waiting, or queued for the write loop.
// A client whose queue is full, which reads nothing of what it is sent,
// loses them.
func (cl *Client) writeFromLoop(pks []*packets.Packet) error {
	written, err := cl.WriteNow(false, pks...)
	if written || err != nil {
		return err
	}
	return cl.queueCopies(pks)
}

// queueCopies queues copies of pks for the client's writer, behind what
// is queued. A client whose queue is full, which reads nothing of what it
// is sent, loses them.
func (cl *Client) queueCopies(pks []*packets.Packet) error {
	for _, pk := range pks {
		queued := new(packets.Packet)
		*queued = *pk
		if !cl.enqueue(pendingWrite{pk: queued}) {
			cl.ops.log.Debug("write queue full: packet dropped", "client", cl.ID, "type", pk.FixedHeader.Type)
			return packets.ErrPendingClientWritesExceeded
		}
	}
	return nil
}

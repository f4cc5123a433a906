// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2023 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"sync"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// pendingWrite is one entry of a client's outbound queue.
//
// dss: ack, when set, is written just before pk, in the same write: the
// state store answers a request with its PUBACK and its response together.
//
// raw, when set instead, is bytes already encoded that the connection
// did not take at once (see WriteNow), or the acknowledgement of a
// publish of the client's that goes out after the deliveries of the read
// loop's round that routed it (see ackAfterRound); it is written as it is.
type pendingWrite struct {
	pk  *packets.Packet
	ack *packets.Packet
	raw []byte
}

// outboundQueue holds the packets waiting for the client's writer.
//
// dss: it was a channel with room for MaximumClientWritesPending entries,
// allocated whole for every connection (128 KiB by default) and scanned by
// every garbage collection even when empty. A slice that grows when
// needed costs nothing while the connection is idle, and lets the writer
// send everything waiting with one write.
//
// Whoever writes what the queue holds, or writes past it (WriteNow), holds
// the queue's write token (writing) for the duration, so that the bytes
// go out in the order they were queued.
//
// dss: the writer is a goroutine that exists only while the queue holds
// something (writeOut): it is started by whoever queues an entry, or
// gives the write token back, while none runs, and it ends when it finds
// the queue empty. Upstream kept a write loop per connection for its
// whole life, whose goroutine and stack an idle connection paid for.
type outboundQueue struct {
	mu      sync.Mutex
	items   []pendingWrite
	writing bool // the write token is taken
	// writer says a writer goroutine runs, or is about to; on says that
	// the client's writer may run (startWriting).
	writer bool
	on     bool
	// held counts the entries that a Write of the client's own must not
	// overtake (precedes): while there are any, it queues behind them
	// (Client.Write). dss.
	held atomic.Int32
}

// precedes reports whether w must go out before the client's later
// writes: an acknowledgement of a publish of the client's, which keep
// the order of the publishes [MQTT-4.6.0-2] [MQTT-4.6.0-3], or the rest
// of a packet partly written.
func (w *pendingWrite) precedes() bool {
	if w.ack != nil || w.raw != nil {
		return true
	}
	t := w.pk.FixedHeader.Type
	return t == packets.Puback || t == packets.Pubrec
}

// wantsWriter reports whether a writer must be started for what the
// queue holds, and notes that it is; the caller holds mu.
func (q *outboundQueue) wantsWriter() bool {
	if !q.on || q.writer || q.writing || len(q.items) == 0 {
		return false
	}
	q.writer = true
	return true
}

// push queues w unless max entries are waiting, and reports whether it
// did and whether the caller must start the writer.
func (q *outboundQueue) push(w pendingWrite, max int) (queued, start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if max > 0 && len(q.items) >= max {
		return false, false
	}
	if w.pk != nil {
		w.pk.Retain() // dss: released by the writer once written
	}
	if w.precedes() {
		q.held.Add(1)
	}
	q.items = append(q.items, w)
	return true, q.wantsWriter()
}

// take takes the write token and moves every waiting entry to into, for
// the writer. It reports false, and takes nothing, when the queue is
// empty, or the token is taken (its holder starts a writer when it gives
// it back, if anything is waiting then): the writer ends.
func (q *outboundQueue) take(into []pendingWrite) ([]pendingWrite, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || len(q.items) == 0 {
		q.writer = false
		return into, false
	}
	q.writing = true
	into = append(into, q.items...)
	clear(q.items)
	if cap(q.items) > 64 {
		q.items = nil // a burst is over: give its memory back
	} else {
		q.items = q.items[:0]
	}
	return into, true
}

// stopWriter ends the writer, leaving what is queued: the client is
// closed.
func (q *outboundQueue) stopWriter() {
	q.mu.Lock()
	q.writer = false
	q.mu.Unlock()
}

// claim takes the write token if nothing is queued.
func (q *outboundQueue) claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || len(q.items) > 0 {
		return false
	}
	q.writing = true
	return true
}

// giveBack returns the write token, with rest, bytes its holder could not
// write, to be written before anything queued meanwhile. It reports
// whether the caller must start the writer.
func (q *outboundQueue) giveBack(rest []byte) (start bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(rest) > 0 {
		q.items = append(q.items, pendingWrite{})
		copy(q.items[1:], q.items)
		q.items[0] = pendingWrite{raw: rest}
		q.held.Add(1)
	}
	q.writing = false
	return q.wantsWriter()
}

// release returns the writer's write token; the writer goes on.
func (q *outboundQueue) release() {
	q.mu.Lock()
	q.writing = false
	q.mu.Unlock()
}

// writeBatch bounds how many packets one write carries.
const writeBatch = 64

// startWriting lets the client's writer run, and starts it if packets
// were queued before.
func (cl *Client) startWriting() {
	q := &cl.State.outbound
	q.mu.Lock()
	q.on = true
	start := q.wantsWriter()
	q.mu.Unlock()
	if start {
		cl.ops.workers.write(cl)
	}
}

// giveBackToken returns the queue's write token for WriteNow, with the
// bytes it could not write, and starts the writer if entries wait.
func (cl *Client) giveBackToken(rest []byte) {
	if cl.State.outbound.giveBack(rest) {
		cl.ops.workers.write(cl)
	}
}

// writerScratch is a writer's working memory, kept between writers of
// all clients rather than by each client.
type writerScratch struct {
	batch []pendingWrite
	pks   []*packets.Packet
	sizes []int
}

var writerScratches = sync.Pool{New: func() any { return new(writerScratch) }}

// writeOut is the client's writer: it writes what the queue holds until
// it is empty or the client is closed.
func (cl *Client) writeOut() {
	sc := writerScratches.Get().(*writerScratch)
	defer writerScratches.Put(sc)
	q := &cl.State.outbound
	for {
		if cl.Closed() {
			q.stopWriter()
			return
		}
		batch, ok := q.take(sc.batch[:0])
		sc.batch = batch
		if !ok {
			return // empty, or a WriteNow is under way; it starts a writer when done
		}
		for len(batch) > 0 {
			if batch[0].raw != nil {
				cl.writeRaw(batch[0].raw)
				q.held.Add(-1)
				atomic.AddInt32(&cl.State.outboundQty, -1)
				batch[0] = pendingWrite{}
				batch = batch[1:]
				continue
			}
			pks, n := packetsOf(sc.pks[:0], batch)
			if err := cl.writePacketsWaiting(pks); err != nil {
				cl.ops.log.Debug("failed publishing packet", "error", err, "client", cl.ID)
			}
			cl.written(batch[:n])
			clear(pks)
			sc.pks = pks[:0]
			batch = batch[n:]
		}
		q.release()
		cl.State.retained.wake() // dss: room for retained messages
		if cap(sc.pks) > 2*writeBatch {
			sc.pks = nil
		}
		if cap(sc.batch) > 4*writeBatch {
			sc.batch = nil
		}
	}
}

// packetsOf appends to pks the packets of batch's first entries, each
// acknowledgement before its packet, up to writeBatch entries or the
// first entry of bytes (raw), and returns them with how many entries it
// took.
func packetsOf(pks []*packets.Packet, batch []pendingWrite) ([]*packets.Packet, int) {
	n := 0
	for _, w := range batch[:min(len(batch), writeBatch)] {
		if w.raw != nil {
			break
		}
		if w.ack != nil {
			pks = append(pks, w.ack)
		}
		pks = append(pks, w.pk)
		n++
	}
	return pks, n
}

// written lets go of batch's entries once their packets are encoded (the
// write buffer has their bytes): the packets are released and the
// queue's counts drop by them.
func (cl *Client) written(batch []pendingWrite) {
	held := int32(0)
	for i := range batch {
		w := &batch[i]
		if w.pk != nil {
			w.pk.Release()
		}
		if w.precedes() {
			held++
		}
	}
	if held > 0 {
		cl.State.outbound.held.Add(-held)
	}
	atomic.AddInt32(&cl.State.outboundQty, -int32(len(batch)))
	clear(batch)
}

// Queue queues a copy of pk for the client's writer, behind what is
// queued already. It reports false when the queue is full.
//
// dss: for a PUBACK that goes out later than the publish was read.
func (cl *Client) Queue(pk *packets.Packet) bool {
	queued := new(packets.Packet)
	*queued = *pk
	return cl.enqueue(pendingWrite{pk: queued})
}

// enqueue hands w to the client's writer, unless the queue is full.
func (cl *Client) enqueue(w pendingWrite) bool {
	return cl.enqueueBounded(w, true, nil)
}

// enqueueBounded is enqueue, bounded by the queue's size or not.
func (cl *Client) enqueueBounded(w pendingWrite, bounded bool, round *writeRound) bool {
	limit := 0
	if bounded {
		limit = int(cl.ops.options.Capabilities.MaximumClientWritesPending)
	}
	queued, start := cl.State.outbound.push(w, limit)
	if !queued {
		return false
	}
	atomic.AddInt32(&cl.State.outboundQty, 1)
	if start {
		if round != nil {
			round.add(cl)
		} else {
			cl.ops.workers.write(cl)
		}
	}
	return true
}

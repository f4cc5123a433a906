// SPDX-License-Identifier: MIT

package mqtt

import (
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/mempool"
)

// dss: a read loop that routes a publish in its turn queues the
// deliveries for the subscribers' writers, as any goroutine does; but
// rather than wake a worker for each subscriber whose writer is to start,
// it writes their queues itself once its round is over (every connection
// epoll reported ready has had its turn), as far as each connection takes
// the bytes without waiting. One publisher and one subscriber spent a
// goroutine switch and a wake-up per message on the subscriber's writer;
// many publishers to one subscriber still get one write per round for
// all their messages, which writing each delivery at once lost.

// writeRound holds the clients whose writer a read loop's round is to
// be: their queues got entries during the round and no writer runs.
type writeRound struct {
	clients []*Client
	sc      writerScratch
	// written counts the queues the round wrote whole, leaving nothing
	// to a worker.
	written atomic.Int64
}

// add makes the round cl's writer, which wantsWriter assigned.
func (r *writeRound) add(cl *Client) { r.clients = append(r.clients, cl) }

// flush writes the queues of the round's clients; the round is empty
// after it.
func (r *writeRound) flush() {
	for i, cl := range r.clients {
		if cl.flushQueue(&r.sc) {
			r.written.Add(1)
		}
		r.clients[i] = nil
	}
	r.clients = r.clients[:0]
}

// flushQueue is cl's writer on a read loop: it writes what the queue
// holds as far as the connection takes it without waiting, and leaves
// the rest, and a queue it cannot write that way (bytes an earlier write
// left, a burst, a connection without a raw descriptor or being written
// to), to a worker. It reports whether it wrote what it took whole.
func (cl *Client) flushQueue(sc *writerScratch) (whole bool) {
	q := &cl.State.outbound
	if cl.Closed() {
		q.stopWriter()
		return false
	}
	if cl.Net.raw == nil || !cl.Net.writeMu.TryLock() {
		cl.ops.workers.write(cl)
		return false
	}
	batch, ok := q.take(sc.batch[:0])
	sc.batch = batch
	if !ok {
		cl.Net.writeMu.Unlock()
		return false // empty, or a WriteNow is under way; it starts a writer when done
	}
	if len(batch) > writeBatch {
		q.putBack(batch) // a burst: the worker writes it in batches
		cl.Net.writeMu.Unlock()
		clear(batch)
		cl.ops.workers.write(cl)
		return false
	}
	rest, err := cl.writeEntriesNoWait(batch, sc)
	cl.Net.writeMu.Unlock()
	if err != nil {
		cl.ops.log.Debug("failed publishing packet", "error", err, "client", cl.ID)
	}
	cl.written(batch)
	if len(rest) > 0 {
		atomic.AddInt32(&cl.State.outboundQty, 1)
		q.held.Add(1)
		q.putBack([]pendingWrite{{raw: rest}})
		cl.ops.workers.write(cl)
		return false
	}
	q.release()
	cl.State.retained.wake() // dss: room for retained messages
	if q.writerDone() {
		return true
	}
	cl.ops.workers.write(cl) // queued while the round wrote
	return true
}

// writeEntriesNoWait encodes batch's entries in their order, packets and
// bytes already encoded alike, and writes them as writeNoWait does.
func (cl *Client) writeEntriesNoWait(batch []pendingWrite, sc *writerScratch) ([]byte, error) {
	buf := mempool.GetBuffer()
	defer mempool.PutBuffer(buf)
	var encodeErr error
	pks := sc.pks[:0]
	sizes := sc.sizes[:0]
	for _, w := range batch {
		if w.raw != nil {
			buf.Write(w.raw)
			continue
		}
		start := len(pks)
		if w.ack != nil {
			pks = append(pks, w.ack)
		}
		pks = append(pks, w.pk)
		sizes = append(sizes, make([]int, len(pks)-start)...)
		if err := cl.encodePackets(pks[start:], buf, sizes[start:]); err != nil && encodeErr == nil {
			encodeErr = err
		}
	}
	rest, err := cl.writeBytesNoWait(buf.Bytes())
	if err == nil {
		cl.packetsSent(pks, sizes)
		err = encodeErr
	}
	clear(pks)
	sc.pks, sc.sizes = pks[:0], sizes[:0]
	return rest, err
}

// putBack returns entries the writer took, ahead of what was queued
// since, and the write token; the writer role stays with the caller,
// which hands it to a worker.
func (q *outboundQueue) putBack(ws []pendingWrite) {
	q.mu.Lock()
	// A slice of its own: ws is the caller's, which clears it.
	items := make([]pendingWrite, 0, len(ws)+len(q.items))
	q.items = append(append(items, ws...), q.items...)
	q.writing = false
	q.mu.Unlock()
}

// writerDone ends the writer role if the queue is empty, and reports
// whether it did.
func (q *outboundQueue) writerDone() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 {
		return false
	}
	q.writer = false
	return true
}

// SPDX-License-Identifier: MIT

package mqtt

import "time"

// dss: a connection parked in a read loop has no goroutine, and neither
// has a connection with nothing to write (see Client.park and
// outboundQueue). When the loop hands a connection back, or packets are
// queued for it, the work goes to a worker: a goroutine that waits for
// the next such work once it is done, and ends when none came for a
// while. A goroutine started for each piece of work began with a small
// stack and grew it (copying it) on every packet the loop hands back:
// one publisher and one subscriber spent a third more CPU per message.
// A worker's stack has grown once.

// workerIdle is how long a worker waits for work before it ends: between
// one and two of it.
const workerIdle = 2 * time.Second

// workerPool hands the work of connections to its workers.
type workerPool struct {
	// work is unbuffered: a send succeeds when a worker waits for work.
	work chan workItem
	done chan struct{} // closed when the server closed: the workers end
}

// workItem is the work of one connection: continuing its reading (the
// loop handed it back, with err) or writing what is queued (write).
type workItem struct {
	cl    *Client
	err   error
	write bool
}

func newWorkerPool() *workerPool {
	return &workerPool{work: make(chan workItem), done: make(chan struct{})}
}

// resume continues cl, taken back from its read loop with err, on a
// worker.
func (p *workerPool) resume(cl *Client, err error) {
	p.run(workItem{cl: cl, err: err})
}

// write writes what cl's queue holds, on a worker.
func (p *workerPool) write(cl *Client) {
	p.run(workItem{cl: cl, write: true})
}

// run gives w to a worker that waits for work, or to a new one. A pool
// of nil (a client of no server, in tests) starts a goroutine for it.
func (p *workerPool) run(w workItem) {
	if p == nil {
		go w.do()
		return
	}
	select {
	case p.work <- w:
	default:
		go p.worker(w)
	}
}

// worker does w, and then the work it is given, until none came for
// workerIdle or the pool is closed.
func (p *workerPool) worker(w workItem) {
	w.do()
	tick := time.NewTicker(workerIdle)
	defer tick.Stop()
	worked := false
	for {
		select {
		case w = <-p.work:
			w.do()
			worked = true
		case <-tick.C:
			if !worked {
				return
			}
			worked = false
		case <-p.done:
			return
		}
	}
}

// close ends the workers once they are done with their work.
func (p *workerPool) close() { close(p.done) }

func (w workItem) do() {
	if w.write {
		w.cl.writeOut()
		return
	}
	w.cl.resumeParked(w.err)
}

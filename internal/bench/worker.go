package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"
)

// phase is what the workers of one phase of a run share: the preload, the
// measured requests or a fill.
type phase struct {
	cfg  *Config
	base time.Time
	// t0 and t1 bound the measured window, in ns since base. Workers stop
	// sending new requests at t1.
	t0, t1 int64
	keys   keySpace
	value  []byte
	hist   *histograms
	// sequential phases store every key once (preload, fill); the others
	// pick keys at random.
	sequential bool
	verb       verb
	mix        bool
	getRatio   float64
	seconds    int    // length of the timeline
	seqBase    uint64 // first sequence number of the phase
	// stampValues writes the time of each SET's write, in ns since base,
	// into the first 8 bytes of its value, for the watchers that receive
	// its notification (watch mode).
	stampValues bool
	// budget, when not nil, holds how many requests may still be sent.
	budget  *atomic.Int64
	stopped atomic.Bool
}

func (ph *phase) now() int64 { return int64(time.Since(ph.base)) }

// writeStall is how long a write may block before the connection counts
// as lost.
func (ph *phase) writeStall() time.Duration { return max(ph.cfg.Timeout, ph.cfg.ConnectTimeout) }

// seqMask keeps the sequence number part of the correlation data; the top
// 16 bits name the slot.
const seqMask = 1<<48 - 1

// tick is how often a worker wakes up when no response arrives, to find
// timeouts and the end of the window.
const tick = 100 * time.Millisecond

// slot is one outstanding request of a connection. Slot i sends with
// packet id i+1, so an id is reused only after its PUBACK.
type slot struct {
	seq      uint64
	sentAt   int64 // ns since the phase's base; 0 until written
	verb     verb
	busy     bool
	acked    bool // the PUBACK came
	answered bool // the response came
	timedOut bool
}

// worker drives one connection, closed-loop, on one goroutine: it reads
// whatever the server sent, handles every whole packet, and writes the
// acknowledgements and next requests in one write.
type worker struct {
	ph    *phase
	c     *conn
	tpl   [numVerbs]*template
	slots []slot
	free  []uint16
	busy  int
	// stuck counts the busy slots that timed out before their PUBACK
	// came; their packet ids stay taken until it does.
	stuck int
	// timedOut holds the correlation data of released requests that
	// timed out, so that their responses count as late, not as errors.
	timedOut  map[uint64]bool
	seq       uint64
	out       []byte
	unstamped []uint16
	// valueAt holds the offsets in out of the values to stamp with the
	// time of the write (phase.stampValues).
	valueAt []int
	rng     *rand.Rand
	rec     recorder
	cnt     counters
	ts      []byte
	tsMs    int64
	// nextKey and endKey bound the keys of a sequential phase.
	nextKey, endKey int
	readDL, writeDL int64
	lastScan        int64
	pkt             publish
}

func newWorker(ph *phase, c *conn, id, inflight int, seed uint64) *worker {
	w := &worker{
		ph:       ph,
		c:        c,
		slots:    make([]slot, inflight),
		free:     make([]uint16, 0, inflight),
		timedOut: make(map[uint64]bool),
		rng:      rand.New(rand.NewPCG(seed, uint64(id))),
		rec:      ph.hist.recorder(id),
		cnt:      newCounters(ph.seconds),
		out:      make([]byte, 0, 16<<10),
		seq:      ph.seqBase,
	}
	for i := inflight - 1; i >= 0; i-- {
		w.free = append(w.free, uint16(i))
	}
	args := requestArgs{value: ph.value, px: ph.cfg.PX.Milliseconds()}
	for _, v := range []verb{opSet, opGet, opDel, opVDel} {
		w.tpl[v] = newTemplate(v, ph.keys, args, c.responseTopic)
	}
	return w
}

// run drives the connection until the phase ends for it.
func (w *worker) run() {
	defer w.rec.flush()
	now := w.ph.now()
	w.refreshTimestamp()
	for w.issue(now) {
	}
	if !w.flush() {
		return
	}
	for {
		if !w.issuing(now) && w.busy == w.stuck {
			// Nothing is outstanding but requests that timed out and
			// wait for a PUBACK that may never come.
			return
		}
		if w.ph.t1 != math.MaxInt64 && now > w.ph.t1+int64(w.ph.cfg.Timeout) {
			w.expireAll()
			return
		}
		if now > w.readDL-int64(tick/2) {
			w.readDL = now + int64(tick)
			_ = w.c.nc.SetReadDeadline(w.ph.base.Add(time.Duration(w.readDL)))
		}
		err := w.c.fill()
		now = w.ph.now()
		switch {
		case err == nil:
		case w.ph.stopped.Load():
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
		default:
			w.cnt.fail(errConnection, func() string { return "read: " + err.Error() }, now)
			return
		}
		w.refreshTimestamp()
		for {
			first, body, err := w.c.next()
			if errors.Is(err, errIncomplete) {
				break
			}
			if err != nil || !w.handle(first, body, now) {
				if err != nil {
					w.cnt.fail(errConnection, func() string { return "read: " + err.Error() }, now)
				}
				return
			}
		}
		if now-w.lastScan > int64(tick) {
			w.scan(now)
		}
		if !w.flush() {
			return
		}
	}
}

// issuing reports whether the worker still sends new requests.
func (w *worker) issuing(now int64) bool {
	if w.ph.stopped.Load() || now >= w.ph.t1 {
		return false
	}
	if w.ph.budget != nil && w.ph.budget.Load() <= 0 {
		return false
	}
	return !w.ph.sequential || w.nextKey < w.endKey
}

// issue appends a new request to the write buffer, if a slot is free and
// the phase goes on.
func (w *worker) issue(now int64) bool {
	if len(w.free) == 0 || !w.issuing(now) {
		return false
	}
	if w.ph.budget != nil && w.ph.budget.Add(-1) < 0 {
		return false
	}
	i := w.free[len(w.free)-1]
	w.free = w.free[:len(w.free)-1]
	var v verb
	var key int
	switch {
	case w.ph.sequential:
		v, key = opSet, w.nextKey
		w.nextKey++
	case w.ph.mix:
		v, key = opSet, w.rng.IntN(w.ph.keys.n)
		if w.rng.Float64() < w.ph.getRatio {
			v = opGet
		}
	default:
		v, key = w.ph.verb, w.rng.IntN(w.ph.keys.n)
	}
	w.seq++
	w.slots[i] = slot{seq: w.seq, verb: v, busy: true}
	w.busy++
	w.cnt.sent++
	if w.ph.stampValues && w.tpl[v].valOff >= 0 {
		w.valueAt = append(w.valueAt, len(w.out)+w.tpl[v].valOff)
	}
	w.out = w.tpl[v].appendRequest(w.out, i+1, uint64(i)<<48|w.seq, w.ts, key)
	w.unstamped = append(w.unstamped, i)
	return true
}

// flush writes the buffered acknowledgements and requests, and stamps the
// requests with the time of the write.
func (w *worker) flush() bool {
	if len(w.out) == 0 {
		return true
	}
	now := w.ph.now()
	for _, i := range w.unstamped {
		w.slots[i].sentAt = now
	}
	w.unstamped = w.unstamped[:0]
	for _, at := range w.valueAt {
		binary.BigEndian.PutUint64(w.out[at:], uint64(now))
	}
	w.valueAt = w.valueAt[:0]
	// A write only blocks when the server stops reading; it is bounded
	// apart from the requests' timeout, which a busy machine's scheduler
	// alone may exceed between setting the deadline and writing.
	if stall := w.ph.writeStall(); now > w.writeDL-int64(stall/2) {
		w.writeDL = now + int64(stall)
		_ = w.c.nc.SetWriteDeadline(w.ph.base.Add(time.Duration(w.writeDL)))
	}
	if _, err := w.c.nc.Write(w.out); err != nil {
		if !w.ph.stopped.Load() {
			w.cnt.fail(errConnection, func() string { return "write: " + err.Error() }, now)
		}
		return false
	}
	w.out = w.out[:0]
	return true
}

// refreshTimestamp renews the __ts that requests carry, once per
// millisecond at most.
func (w *worker) refreshTimestamp() {
	ms := time.Now().UnixMilli()
	if ms != w.tsMs {
		w.tsMs = ms
		w.ts = appendTimestamp(w.ts[:0], ms)
	}
}

// handle handles one packet from the server. It returns false when the
// connection cannot go on.
func (w *worker) handle(first byte, body []byte, now int64) bool {
	switch first >> 4 {
	case typePublish:
		p := &w.pkt
		if err := parsePublish(first, body, p); err != nil {
			w.cnt.fail(errConnection, func() string { return "malformed PUBLISH from the server" }, now)
			return false
		}
		if p.qos > 0 {
			w.out = appendPuback(w.out, p.packetID)
		}
		if string(p.topic) != w.c.responseTopic {
			w.cnt.fail(errTopic, func() string { return fmt.Sprintf("message on %q", p.topic) }, now)
			return true
		}
		w.response(p, now)
	case typePuback:
		id, reason, err := parseAck(body)
		if err != nil {
			w.cnt.fail(errConnection, func() string { return "malformed PUBACK from the server" }, now)
			return false
		}
		w.ack(id, reason, now)
	case typeDisconnect:
		w.cnt.fail(errConnection, func() string { return fmt.Sprintf("the server disconnected: % x", body) }, now)
		return false
	case typePingresp:
	default:
		w.cnt.fail(errConnection, func() string { return fmt.Sprintf("unexpected packet type %d", first>>4) }, now)
	}
	return true
}

// response handles the response p.
func (w *worker) response(p *publish, now int64) {
	if len(p.correlation) != 8 {
		w.cnt.fail(errCorrelation, func() string { return fmt.Sprintf("correlation data % x", p.correlation) }, now)
		return
	}
	corr := binary.BigEndian.Uint64(p.correlation)
	i := int(corr >> 48)
	if i >= len(w.slots) || !w.slots[i].busy || w.slots[i].seq != corr&seqMask || w.slots[i].answered {
		if w.timedOut[corr] {
			delete(w.timedOut, corr)
			w.cnt.late++
			return
		}
		w.cnt.fail(errCorrelation, func() string { return fmt.Sprintf("correlation data % x of no outstanding request", p.correlation) }, now)
		return
	}
	s := &w.slots[i]
	s.answered = true
	if s.timedOut {
		delete(w.timedOut, corr)
		w.cnt.late++
	} else if out, kind := validate(s.verb, w.ph.cfg.ValueSize, p); kind != errNone {
		w.cnt.fail(kind, func() string { return describe(s.verb, p) }, now)
	} else {
		w.count(s.verb, out, now-s.sentAt, now)
	}
	if s.acked {
		w.release(i, now)
	}
}

// count records a valid response.
func (w *worker) count(v verb, out outcome, latency, now int64) {
	sec := int(now / int64(time.Second))
	if sec < len(w.cnt.timeline) {
		t := &w.cnt.timeline[sec]
		t.Responses++
		t.MaxNS = max(t.MaxNS, latency)
	} else {
		sec = -1
	}
	if v == opSet && out == outOK {
		w.cnt.applied++
	}
	measured := now >= w.ph.t0 && now < w.ph.t1
	w.rec.recordAt(latency, sec, measured)
	if measured {
		w.cnt.requests++
		w.cnt.outcomes[v][out]++
	}
}

// ack handles the PUBACK of the request with packet id id.
func (w *worker) ack(id uint16, reason byte, now int64) {
	i := int(id) - 1
	if i < 0 || i >= len(w.slots) || !w.slots[i].busy || w.slots[i].acked {
		w.cnt.fail(errCorrelation, func() string { return fmt.Sprintf("PUBACK for packet id %d, which is not in flight", id) }, now)
		return
	}
	s := &w.slots[i]
	s.acked = true
	if reason >= 0x80 {
		w.cnt.fail(errPuback, func() string { return fmt.Sprintf("%s acknowledged with reason code %#x", s.verb, reason) }, now)
		s.answered = true // no response comes
	}
	if s.timedOut {
		w.stuck--
		w.release(i, now)
	} else if s.answered {
		w.release(i, now)
	}
}

func (w *worker) release(i int, now int64) {
	s := &w.slots[i]
	if s.timedOut && !s.answered {
		// The response may still come: it counts as late then.
		w.timedOut[uint64(i)<<48|s.seq] = true
	}
	*s = slot{}
	w.busy--
	w.free = append(w.free, uint16(i))
	w.issue(now)
}

// scan counts the requests that are outstanding for longer than the
// timeout. A slot whose PUBACK came is reused at once; one still waiting
// for its PUBACK is reused when it comes, since its packet id is taken
// until then.
func (w *worker) scan(now int64) {
	w.lastScan = now
	limit := int64(w.ph.cfg.Timeout)
	for i := range w.slots {
		s := &w.slots[i]
		if !s.busy || s.timedOut || s.sentAt == 0 || now-s.sentAt <= limit {
			continue
		}
		s.timedOut = true
		w.cnt.timeouts++
		if s.acked {
			w.release(i, now)
		} else {
			w.stuck++
		}
	}
}

// expireAll counts every request still outstanding at the end as timed
// out.
func (w *worker) expireAll() {
	for i := range w.slots {
		if s := &w.slots[i]; s.busy && !s.timedOut {
			w.cnt.timeouts++
		}
	}
}

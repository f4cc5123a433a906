package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// Config configures a Node.
type Config struct {
	// Clock issues the versions. Required.
	Clock *hlc.Clock
	// MaxSkew is how far ahead of the clock a request's __ts or __ft may
	// be. Zero means one minute.
	MaxSkew time.Duration
	// Machine is the state to start from; nil means an empty machine.
	Machine *store.Machine
	// Journal records the effects of the writes that the local log
	// applies; nil keeps everything in memory. It must be nil with Log.
	Journal Journal
	// Log is the log that decided writes pass through before they are
	// applied (ADR 0004). Nil means the local log of a single node: apply
	// at once, record the effects in Journal.
	Log Log
	// Notifier receives KEYNOTIFY requests and changes; nil means none.
	Notifier Notifier
	// Logger receives the engine's log lines; nil means slog.Default().
	Logger *slog.Logger
	// ExpiryBatch bounds how many keys one expiry round removes while
	// holding the engine lock. Zero means 256.
	ExpiryBatch int
	// VolatileKeys honours requests that ask for a key to be kept in
	// memory only (the "flagged" persistence mode); otherwise every key is
	// journaled.
	VolatileKeys bool
	// SnapshotCheck is how often the node asks the journal whether a
	// snapshot is due. Zero means one second.
	SnapshotCheck time.Duration
	// MaxUndelivered bounds the requests and notifications waiting for
	// the log, the journal or delivery. At the bound, Submit answers
	// "the state store is busy" at once instead of waiting, so that clients
	// that send faster than the disk keeps up are told to slow down and the
	// read loop that submits never stalls. Zero means 65536.
	MaxUndelivered int
}

// errUnavailable answers requests that the engine cannot carry out because
// it is closing, its journal failed or its log cannot take writes.
var errUnavailable = wire.ErrUnavailable

// errBusy answers requests that arrive while the pipeline is full.
var errBusy = wire.ErrBusy

// Node is the engine of a single node. Create it with New, start it with
// Start and stop it with Close.
type Node struct {
	cfg      Config
	clock    *hlc.Clock
	journal  Journal
	wal      Log
	local    bool // wal is the local log
	notifier Notifier
	log      *slog.Logger

	mu      sync.Mutex
	m       *store.Machine // guarded by mu
	queue   []item         // guarded by mu; applied, waiting for delivery
	changes []store.Change // guarded by mu; scratch for Apply
	write   Write          // guarded by mu; scratch for a write being proposed
	closing bool           // guarded by mu
	failed  error          // guarded by mu; the journal error that stopped writes
	backups []*backupTap   // guarded by mu; the backups running
	// undelivered counts the requests proposed to a log that has not
	// applied them yet and the items queued or being delivered. While it
	// is zero and a request needs no journal write, its result is ready at
	// once and is handed back on the submitter's goroutine.
	undelivered int   // guarded by mu
	timerAt     int64 // guarded by mu; when the expiry timer fires, 0 if idle
	// lastTime is the latest Time of an applied command: a node that
	// decides commands never decides an earlier one.
	lastTime int64 // guarded by mu

	wake       chan struct{} // delivery goroutine: the queue is not empty
	expiryWake chan struct{} // expiry goroutine: an earlier deadline exists
	stop       chan struct{}
	done       sync.WaitGroup
	stopOnce   sync.Once
}

// item is one entry of the delivery queue: an op to complete or a change
// to announce.
type item struct {
	op      *Op
	deliver func()
	// journaled marks an item whose command is in the journal and not
	// yet flushed.
	journaled bool
}

// New returns a node that is ready to Start.
func New(cfg Config) *Node {
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = time.Minute
	}
	if cfg.ExpiryBatch == 0 {
		cfg.ExpiryBatch = 256
	}
	if cfg.SnapshotCheck == 0 {
		cfg.SnapshotCheck = time.Second
	}
	if cfg.MaxUndelivered == 0 {
		cfg.MaxUndelivered = 1 << 16
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := cfg.Machine
	if m == nil {
		m = store.New()
	}
	// Versions issued before a restart are in the machine: never go below.
	cfg.Clock.Observe(m.MaxVersion())
	n := &Node{
		cfg:        cfg,
		clock:      cfg.Clock,
		journal:    cfg.Journal,
		wal:        cfg.Log,
		notifier:   cfg.Notifier,
		log:        cfg.Logger,
		m:          m,
		wake:       make(chan struct{}, 1),
		expiryWake: make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
	if n.wal == nil {
		n.wal, n.local = localLog{n}, true
	}
	return n
}

// Start starts the delivery, expiry and snapshot goroutines.
func (n *Node) Start() {
	n.mu.Lock()
	if d, ok := n.m.NextDeadline(); ok {
		n.scheduleExpiryLocked(d)
	}
	n.mu.Unlock()
	n.done.Add(2)
	go n.deliverLoop()
	go n.expiryLoop()
	if n.journal != nil {
		n.done.Add(1)
		go n.snapshotLoop(n.cfg.SnapshotCheck)
	}
}

// Close stops accepting requests, delivers everything already applied,
// flushes the journal and stops the node's goroutines. It returns the
// journal error that stopped the node, if any.
func (n *Node) Close() error {
	n.mu.Lock()
	n.closing = true
	n.mu.Unlock()
	n.stopOnce.Do(func() { close(n.stop) })
	n.done.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failed
}

// Err returns the journal error that stopped the node, or nil while it
// serves.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failed
}

// Submit carries out op, and calls op.Done once its result may be seen.
// When that is at once (nothing applied earlier waits for delivery, and op
// needs neither a journal write nor the log), Done is called before Submit
// returns, on the caller's goroutine, with op.Inline set, and Submit
// reports true; otherwise Done is called later on the delivery goroutine.
//
// Submit never blocks on I/O and never waits for room: it runs on the
// goroutine that read the request, which may serve many connections. When
// MaxUndelivered requests and notifications wait already, op is answered
// "the state store is busy" at once; when ctx is done, or the node is
// closing or failed, "the state store is unavailable".
func (n *Node) Submit(ctx context.Context, op *Op) (inline bool) {
	op.Result = Result{}
	op.Inline = false
	n.mu.Lock()
	switch {
	case n.closing || n.failed != nil || ctx.Err() != nil:
		return n.answerNowLocked(op, errUnavailable)
	case n.undelivered >= n.cfg.MaxUndelivered:
		return n.answerNowLocked(op, errBusy)
	}
	now := max(n.clock.PhysicalNow(), n.lastTime)
	queued := false
	switch err := n.checkClock(op, now); {
	case err != nil:
		op.Result.Err = err
	case op.Request.Verb == wire.VerbGet, op.Request.Verb == wire.VerbKeyInfo:
		n.readLocked(op, now)
	case op.Request.Verb == wire.VerbScan:
		n.scanLocked(op, now)
	case op.Request.Verb == wire.VerbKeyNotify:
		if n.notifier != nil {
			n.notifier.KeyNotify(op)
		}
	case op.Request.Verb == wire.VerbSet, op.Request.Verb == wire.VerbDel, op.Request.Verb == wire.VerbVDel:
		switch n.proposeLocked(op, now) {
		case Pending:
			// The log completes op once it is committed (ApplyCommitted)
			// or lost (Abandon); it counts as undelivered meanwhile.
			n.undelivered++
			n.mu.Unlock()
			return false
		case AppliedUnflushed:
			queued = true
		case Refused:
			op.Result = Result{Err: errUnavailable}
		}
	default:
		op.Result.Err = wire.ErrUnknownCommand
	}
	if n.undelivered == 0 && !queued {
		n.mu.Unlock()
		op.Inline = true
		op.Done(op)
		return true
	}
	n.enqueueLocked(item{op: op, journaled: queued})
	n.mu.Unlock()
	n.signal()
	return false
}

// answerNowLocked answers op with err on the submitter's goroutine and
// releases the engine lock.
func (n *Node) answerNowLocked(op *Op, err *wire.Error) bool {
	n.mu.Unlock()
	op.Result.Err = err
	op.Inline = true
	op.Done(op)
	return true
}

// readLocked carries out a GET or a KEYINFO on this node's machine.
func (n *Node) readLocked(op *Op, now int64) {
	if op.Request.Verb == wire.VerbKeyInfo {
		v, ver, info, ok := n.m.GetInfo(op.Request.Key, now)
		op.Result.Value, op.Result.Found, op.Result.Info, op.Result.Now = v, ok, info, now
		op.Result.setVersion(ver)
		return
	}
	v, ver, ok := n.m.Get(op.Request.Key, now)
	op.Result.Value, op.Result.Found = v, ok
	op.Result.setVersion(ver)
	if ok && op.WithTTL {
		if at, has := n.m.Deadline(op.Request.Key); has {
			op.Result.TTL = max(at-now, 1)
		}
	}
}

// enqueueLocked queues an item for the delivery goroutine.
func (n *Node) enqueueLocked(it item) {
	n.queue = append(n.queue, it)
	n.undelivered++
}

// checkClock refuses a request whose __ts or __ft is too far ahead of the
// physical clock, which read now (milliseconds).
func (n *Node) checkClock(op *Op, now int64) *wire.Error {
	limit := now + n.cfg.MaxSkew.Milliseconds()
	if op.HasTimestamp && op.Timestamp.Wall > limit {
		return wire.ErrTimestampSkew
	}
	if op.HasFence && op.Fence.Wall > limit {
		return wire.ErrFencingSkew
	}
	return nil
}

// proposeLocked turns a SET, DEL or VDEL into a command, decides its time
// and version, and hands it to the log.
func (n *Node) proposeLocked(op *Op, now int64) Proposed {
	r := &op.Request
	w := &n.write
	*w = Write{Op: op, Command: store.Command{
		Key:      r.Key,
		Value:    r.Value,
		Cond:     storeCondition[r.Cond],
		Time:     now,
		Fence:    op.Fence,
		HasFence: op.HasFence,
		Volatile: op.Volatile && n.cfg.VolatileKeys,
	}}
	c := &w.Command
	switch r.Verb {
	case wire.VerbSet:
		c.Op = store.OpSet
		if r.PX > 0 {
			c.ExpiresAt = now + r.PX
		}
	case wire.VerbDel:
		c.Op = store.OpDel
	case wire.VerbVDel:
		c.Op = store.OpVDel
	}
	if !n.local || n.m.Expired(r.Key, now) {
		// The local log applies the write now, so whether the key expired
		// is known now; a replicated log applies it later, and the expiry
		// is decided then, from the command's time.
		w.ExpireVersion = n.clock.Now()
	}
	var remote hlc.Timestamp // the zero timestamp: a local event
	if op.HasTimestamp {
		remote = op.Timestamp
	}
	c.Version = n.clock.UpdateAt(remote, now)
	p := n.wal.Propose(w)
	*w = Write{} // keep no reference to the request
	return p
}

// applyWriteLocked applies a decided write to the machine: first the
// expiry of its key if it is due, then its command. It records the changes
// in the journal, queues them for delivery and fills in the result of
// w.Op, if any. It reports whether the changes went into the journal.
func (n *Node) applyWriteLocked(w *Write) bool {
	c := &w.Command
	journaled := false
	if !w.ExpireVersion.IsZero() && n.m.Expired(c.Key, c.Time) {
		// Announce the expiry with a version of its own before the
		// command acts on the key.
		e := store.Command{Op: store.OpExpire, Key: c.Key, Time: c.Time, Version: w.ExpireVersion}
		_, journaled = n.applyLocked(&e)
	}
	res, j := n.applyLocked(c)
	journaled = journaled || j
	n.lastTime = max(n.lastTime, c.Time)
	r := &w.Result
	if n.failed != nil {
		*r = Result{Err: errUnavailable}
		journaled = false
	} else {
		*r = Result{Outcome: res.Outcome, Err: refusal(res.Err)}
		r.setVersion(res.Version)
	}
	if w.Op != nil {
		w.Op.Result = *r
	}
	if c.ExpiresAt != 0 && res.Outcome == store.Applied {
		n.scheduleExpiryLocked(c.ExpiresAt)
	}
	return journaled
}

// applyLocked applies c, records it and queues its changes for delivery.
// It reports whether c went into the journal.
func (n *Node) applyLocked(c *store.Command) (store.Result, bool) {
	res, changes := n.m.Apply(c, n.changes[:0])
	n.changes = changes[:0]
	if len(changes) == 0 {
		return res, false
	}
	for _, t := range n.backups {
		t.addLocked(changes)
	}
	journaled := false
	if n.journal != nil {
		for i := range changes {
			if err := n.journal.Append(&changes[i]); err != nil {
				n.failLocked(err)
				break
			}
		}
		journaled = n.failed == nil
	}
	if n.notifier != nil {
		for i := range changes {
			if d := n.notifier.Changed(&changes[i]); d != nil {
				n.enqueueLocked(item{deliver: d, journaled: journaled})
			}
		}
	}
	return res, journaled
}

// expireLocked removes key, which is past its deadline, through the log.
func (n *Node) expireLocked(key []byte, now int64) Proposed {
	w := &n.write
	*w = Write{Command: store.Command{Op: store.OpExpire, Key: key, Time: now, Version: n.clock.Now()}}
	p := n.wal.Propose(w)
	*w = Write{}
	return p
}

// failLocked stops all writes after the journal failed: the machine is
// ahead of what is durable, so nothing more may be acknowledged.
func (n *Node) failLocked(err error) {
	if n.failed == nil {
		n.failed = err
		n.log.Error("the journal failed; the store refuses every request from now on", "err", err)
	}
}

func (n *Node) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// deliverLoop flushes the journal and delivers results and changes in
// apply order.
func (n *Node) deliverLoop() {
	defer n.done.Done()
	var batch []item
	for {
		select {
		case <-n.wake:
		case <-n.stop:
			// Deliver what was applied before Close.
			n.deliverBatch(&batch)
			return
		}
		n.deliverBatch(&batch)
	}
}

func (n *Node) deliverBatch(batch *[]item) {
	n.mu.Lock()
	b := n.queue
	n.queue = (*batch)[:0]
	n.mu.Unlock()
	if len(b) == 0 {
		*batch = b
		return
	}
	var flushErr error
	if n.journal != nil {
		for _, it := range b {
			if it.journaled {
				flushErr = n.journal.Flush()
				break
			}
		}
	}
	if flushErr != nil {
		n.mu.Lock()
		n.failLocked(flushErr)
		n.mu.Unlock()
	}
	for i := range b {
		it := &b[i]
		if it.journaled && flushErr != nil {
			// Not durable: do not announce it, and answer that the store
			// could not carry it out.
			if it.op != nil {
				it.op.Result = Result{Err: errUnavailable}
			} else {
				it.deliver = nil
			}
		}
		switch {
		case it.op != nil:
			it.op.Done(it.op)
		case it.deliver != nil:
			it.deliver()
		}
		*it = item{}
	}
	n.mu.Lock()
	n.undelivered -= len(b)
	n.mu.Unlock()
	*batch = b
}

package engine

import (
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
	// Journal records applied commands; nil keeps everything in memory.
	Journal Journal
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
	// MaxUndelivered bounds the results and notifications waiting for the
	// journal or for delivery. At the bound, Submit waits, so a client that
	// sends faster than the disk keeps up is slowed down instead of filling
	// the memory. Zero means 65536.
	MaxUndelivered int
}

// errUnavailable answers requests that the engine cannot carry out because
// it is closing or its journal failed.
var errUnavailable = wire.ErrUnavailable

// Node is the engine of a single node. Create it with New, start it with
// Start and stop it with Close.
type Node struct {
	cfg      Config
	clock    *hlc.Clock
	journal  Journal
	notifier Notifier
	log      *slog.Logger

	mu      sync.Mutex
	m       *store.Machine // guarded by mu
	queue   []item         // guarded by mu; applied, waiting for delivery
	changes []store.Change // guarded by mu; scratch for Apply
	closing bool           // guarded by mu
	failed  error          // guarded by mu; the journal error that stopped writes
	// undelivered counts the items queued or being delivered. While it is
	// zero and a request needs no journal write, its result is ready at
	// once and is handed back on the submitter's goroutine.
	undelivered int // guarded by mu
	// roomy is signalled (with mu) when undelivered falls below the
	// limit, for submitters that wait for room.
	roomy   *sync.Cond
	timerAt int64 // guarded by mu; when the expiry timer fires, 0 if idle

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
		notifier:   cfg.Notifier,
		log:        cfg.Logger,
		m:          m,
		wake:       make(chan struct{}, 1),
		expiryWake: make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
	n.roomy = sync.NewCond(&n.mu)
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
	n.roomy.Broadcast()
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

// Submit carries out op: it checks and applies it now, and calls op.Done
// once its result may be seen. When that is at once (nothing applied
// earlier waits for delivery, and op needs no journal write), Done is
// called before Submit returns, on the caller's goroutine, with op.Inline
// set, and Submit reports true; otherwise Done is called later on the
// delivery goroutine. Submit never blocks on I/O.
func (n *Node) Submit(op *Op) (inline bool) {
	op.Result = Result{}
	op.Inline = false
	n.mu.Lock()
	for n.undelivered >= n.cfg.MaxUndelivered && !n.closing && n.failed == nil {
		n.roomy.Wait()
	}
	if n.closing || n.failed != nil {
		n.mu.Unlock()
		op.Result.Err = errUnavailable
		op.Inline = true
		op.Done(op)
		return true
	}
	now := n.clock.PhysicalNow()
	journaled := false
	switch err := n.checkClock(op, now); {
	case err != nil:
		op.Result.Err = err
	case op.Request.Verb == wire.VerbGet:
		v, ver, ok := n.m.Get(op.Request.Key, now)
		op.Result.Value, op.Result.Found = v, ok
		op.Result.setVersion(ver)
	case op.Request.Verb == wire.VerbKeyNotify:
		if n.notifier != nil {
			n.notifier.KeyNotify(op)
		}
	case op.Request.Verb == wire.VerbSet, op.Request.Verb == wire.VerbDel, op.Request.Verb == wire.VerbVDel:
		journaled = n.writeLocked(op, now)
	default:
		op.Result.Err = wire.ErrUnknownCommand
	}
	if n.undelivered == 0 && !journaled {
		n.mu.Unlock()
		op.Inline = true
		op.Done(op)
		return true
	}
	n.enqueueLocked(item{op: op, journaled: journaled})
	n.mu.Unlock()
	n.signal()
	return false
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

// writeLocked turns a SET, DEL or VDEL into a command and applies it. It
// reports whether the command went into the journal.
func (n *Node) writeLocked(op *Op, now int64) bool {
	r := &op.Request
	if n.m.Expired(r.Key, now) {
		// Announce the expiry with a version of its own before the
		// request acts on the key.
		n.expireLocked(r.Key, now)
	}
	c := store.Command{
		Key:      r.Key,
		Value:    r.Value,
		Cond:     storeCondition[r.Cond],
		Time:     now,
		Fence:    op.Fence,
		HasFence: op.HasFence,
		Volatile: op.Volatile && n.cfg.VolatileKeys,
	}
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
	var remote hlc.Timestamp // the zero timestamp: a local event
	if op.HasTimestamp {
		remote = op.Timestamp
	}
	c.Version = n.clock.UpdateAt(remote, now)
	res, journaled := n.applyLocked(&c)
	if n.failed != nil {
		op.Result.Err = errUnavailable
		return false
	}
	op.Result.Outcome, op.Result.Err = res.Outcome, refusal(res.Err)
	op.Result.setVersion(res.Version)
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

// expireLocked removes key, which is past its deadline.
func (n *Node) expireLocked(key []byte, now int64) {
	c := store.Command{Op: store.OpExpire, Key: key, Time: now, Version: n.clock.Now()}
	n.applyLocked(&c)
}

// failLocked stops all writes after the journal failed: the machine is
// ahead of what is durable, so nothing more may be acknowledged.
func (n *Node) failLocked(err error) {
	if n.failed == nil {
		n.roomy.Broadcast()
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
	n.roomy.Broadcast()
	n.mu.Unlock()
	*batch = b
}

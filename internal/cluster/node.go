package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/cluster/raftlog"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/pubsub"
	"github.com/dssio/dss/internal/wire"
)

// applyTimeout bounds how long the proposer waits for Raft to take a
// batch of writes.
const applyTimeout = 2 * time.Second

// Node is one node of a dss cluster: the engine's replicated log (it
// implements engine.Log) and the store the broker submits requests to
// (Submit). Create it with New, start it with Start and stop it with
// Close.
type Node struct {
	cfg   Config
	log   *slog.Logger
	epoch uint64

	mux    *mux
	disk   *raftlog.Log  // the Raft log on disk
	logs   raft.LogStore // disk, with the latest entries cached
	stable *raftlog.Stable
	snaps  *raft.FileSnapshotStore
	trans  *raft.NetworkTransport
	raft   *raft.Raft
	engine *engine.Node
	fsm    *fsm
	rpc    *rpc.Server
	peers  *peerClients
	reads  *reader
	fwd    *forwarder
	health *peerHealth
	order  *writeOrder
	// The broker's replicated metadata, its proposer, the streams of
	// messages to the other nodes, and the broker bound to the node.
	ps     *pubsub.State
	meta   *metaSync
	relay  *relay
	broker Broker
	clock  *hlc.Clock

	mu    sync.Mutex
	ready bool // guarded by mu; a leader whose term-start entry is applied
	// readyEpoch counts the times this node became ready: the writes a
	// session forwards are taken within one (see forwardSession).
	readyEpoch uint64                     // guarded by mu
	readyWait  chan struct{}              // guarded by mu; closed when the node is ready next
	sessions   map[string]*forwardSession // guarded by mu; the newest stream of forwarded writes of each node
	nextID     uint64                     // guarded by mu
	pending    map[uint64]*engine.Op      // guarded by mu; proposed here, not yet applied or abandoned
	batch      []byte                     // guarded by mu; writes not yet handed to Raft
	count      int                        // guarded by mu; writes in batch
	ids        []uint64                   // guarded by mu; the ids in batch that answer a request
	closed     bool                       // guarded by mu

	// returns tells the writes in batch of clients that keep writing
	// (gathering); guarded by mu but for returns.back.
	returns returns

	// inflight counts requests forwarded to the leader or waiting for a
	// read index.
	inflight atomic.Int64
	// snapErr is set while the snapshot the log starts after is gone
	// (see checkSnapshots).
	snapErr atomic.Pointer[error]
	// raftStopped is set once the node left Raft because its log failed.
	raftStopped atomic.Bool
	storageWake chan struct{}

	wake     chan struct{}
	leaderCh chan bool
	stop     chan struct{}
	closing  chan struct{} // closed when Close starts
	wg       sync.WaitGroup
	// awaiting counts the goroutines of await still waiting for a future.
	awaiting atomic.Int64
}

var _ engine.Log = (*Node)(nil)

// New binds the cluster listener and opens the Raft log and snapshots in
// cfg.DataDir. The engine is given in Start.
func New(cfg Config) (*Node, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if len(cfg.Secret) > 0 {
		c, err := tlsFromSecret(cfg.Secret)
		if err != nil {
			return nil, err
		}
		tlsCfg = c
	}
	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n := &Node{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "cluster"),
		pending:     make(map[uint64]*engine.Op),
		sessions:    make(map[string]*forwardSession),
		wake:        make(chan struct{}, 1),
		storageWake: make(chan struct{}, 1),
		leaderCh:    make(chan bool, 16),
		stop:        make(chan struct{}),
		closing:     make(chan struct{}),
	}
	var e [8]byte
	_, _ = rand.Read(e[:])
	n.epoch = binary.LittleEndian.Uint64(e[:])
	n.health = newPeerHealth(n.log, n.memberID)
	n.order = newWriteOrder()
	n.clock = hlc.NewClock(cfg.NodeID, nil)
	n.ps = pubsub.New(n)
	if err := n.openLogStores(dir); err != nil {
		return nil, err
	}
	var err error
	n.snaps, err = raft.NewFileSnapshotStoreWithLogger(dir, 2, newRaftLogger(n.log, n.health))
	if err != nil {
		n.closeStores()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		n.closeStores()
		return nil, fmt.Errorf("cluster: listen on %s: %w", cfg.Listen, err)
	}
	n.rpc = rpc.NewServer()
	if err := n.rpc.RegisterName("Cluster", &service{n: n}); err != nil {
		ln.Close()
		n.closeStores()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n.mux = newMux(ln, tlsCfg, n.log, func(c net.Conn) { n.rpc.ServeConn(c) })
	n.mux.forward = n.serveForward
	n.relay = newRelay(n)
	n.mux.relay = n.relay.serve
	n.peers = newPeerClients(n.mux)
	return n, nil
}

// Addr returns the address the cluster listener is bound to.
func (n *Node) Addr() string { return n.mux.ln.Addr().String() }

// Start starts Raft with e as the state machine's engine: e must have been
// made with this node as its Log.
func (n *Node) Start(e *engine.Node) error {
	n.engine = e
	n.fsm = &fsm{n: n, engine: e, dedupe: newDedupe(n.cfg.DedupeWindow.Milliseconds())}
	n.reads = newReader(n)
	n.fwd = newForwarder(n)
	n.meta = newMetaSync(n)
	n.trans = raft.NewNetworkTransportWithConfig(transportConfig(raftLayer{n.mux}, newRaftLogger(n.log, n.health)))
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.NodeID)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	// No buffered apply channel: a future queued there while Raft shuts
	// down is never answered. The proposer batches writes itself.
	rc.BatchApplyCh = false
	rc.NotifyCh = n.leaderCh
	rc.Logger = newRaftLogger(n.log, n.health)
	has, err := raft.HasExistingState(n.logs, n.stable, n.snaps)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	r, err := raft.NewRaft(rc, n.fsm, n.logs, n.stable, n.snaps, n.trans)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	n.raft = r
	// Only now: the RPC service uses n.raft.
	n.mux.wg.Add(1)
	go n.mux.serve()
	if !has {
		if n.bootstraps() {
			var servers []raft.Server
			for _, p := range n.cfg.Peers {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr), Suffrage: raft.Voter})
			}
			if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				return fmt.Errorf("cluster: bootstrap: %w", err)
			}
			n.log.Info("new cluster bootstrapped", "members", len(servers))
		} else {
			n.log.Info("not among the initial peers: waiting to be added with `dss cluster add`", "node", n.cfg.NodeID)
		}
	}
	n.watchPeers()
	n.wg.Add(3)
	go n.watchLeadership()
	go n.propose()
	go n.watchStorage(n.cfg.StorageCheck)
	n.reads.start()
	n.fwd.start()
	n.meta.start()
	n.relay.start()
	return nil
}

// memberID returns the id of the member at addr, "" when none is.
func (n *Node) memberID(addr string) string {
	if n.raft == nil {
		return ""
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return ""
	}
	for _, s := range f.Configuration().Servers {
		if string(s.Address) == addr {
			return string(s.ID)
		}
	}
	return ""
}

// watchPeers tells the peer health of peers that answer again and of
// elections that end.
func (n *Node) watchPeers() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.ResumedHeartbeatObservation, raft.LeaderObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.raft.DeregisterObserver(obs)
		for {
			select {
			case o := <-ch:
				switch d := o.Data.(type) {
				case raft.ResumedHeartbeatObservation:
					n.health.reachable(string(d.PeerID))
				case raft.LeaderObservation:
					if d.LeaderID != "" {
						n.health.electionOver()
					}
				}
			case <-n.stop:
				return
			}
		}
	}()
}

// bootstraps reports whether this node is one of the initial peers.
func (n *Node) bootstraps() bool {
	for _, p := range n.cfg.Peers {
		if p.ID == n.cfg.NodeID {
			return true
		}
	}
	return false
}

// Close stops the node: writes not yet committed are answered "the state
// store is unavailable", Raft stops, and the listener closes. The engine
// is closed by its owner afterwards.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	wasReady := n.ready
	n.closed = true
	n.ready = false
	n.mu.Unlock()
	close(n.closing)
	if n.meta != nil {
		n.meta.stop()
	}
	var err error
	if n.raft != nil {
		if wasReady {
			// A leader that stops hands its leadership to the most
			// current follower first, so that the others need not wait
			// for an election timeout.
			f := n.raft.LeadershipTransfer()
			transferred := make(chan error, 1)
			go func() { transferred <- f.Error() }()
			select {
			case terr := <-transferred:
				if terr != nil {
					n.log.Info("leadership not handed over before stopping", "err", terr)
				}
			case <-time.After(2 * time.Second):
			}
		}
		n.settleAwaits(2 * time.Second)
		err = n.raft.Shutdown().Error()
	}
	close(n.stop)
	if n.reads != nil {
		n.reads.close()
	}
	n.relay.close()
	n.wg.Wait()
	if n.fsm != nil {
		// Requests waiting for this node to apply an entry are answered.
		n.fsm.abandonWaiters()
	}
	// Whatever was proposed and not applied is answered now.
	n.mu.Lock()
	ops := make([]*engine.Op, 0, len(n.pending))
	for id, op := range n.pending {
		ops = append(ops, op)
		delete(n.pending, id)
	}
	n.batch, n.count, n.ids = nil, 0, nil
	n.returns.propose()
	n.mu.Unlock()
	if len(ops) > 0 {
		for _, op := range ops {
			n.endWrite(op)
		}
		n.engine.Abandon(ops)
	}
	n.peers.close()
	if n.trans != nil {
		n.trans.CloseStreams() // the connections it dialled
		err = errors.Join(err, n.trans.Close())
	}
	err = errors.Join(err, n.mux.Close())
	return errors.Join(err, n.closeStores())
}

// Propose implements engine.Log: it adds a decided write to the batch the
// proposer hands to Raft next. It is called under the engine lock.
func (n *Node) Propose(w *engine.Write) engine.Proposed {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.ready {
		return engine.Refused
	}
	if w.Op != nil {
		if fo, ok := w.Op.Caller.(*forwardOp); ok && !n.takesForwardedLocked(fo.s) {
			return engine.Refused
		}
	}
	n.nextID++
	id := n.nextID
	if w.Op != nil {
		n.pending[id] = w.Op
		n.ids = append(n.ids, id)
		n.beginWrite(w.Op)
		n.returns.add(w.Op.Client)
	}
	if n.batch == nil {
		n.batch = make([]byte, 0, 4096)
	}
	n.batch = appendWrite(n.batch, origin{node: n.cfg.NodeID, epoch: n.epoch, id: id}, w)
	n.count++
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return engine.Pending
}

// propose hands the batches of writes to Raft, one at a time and in the
// order they were decided, so that the log holds them in version order.
//
// It waits for each batch to be committed and applied before it hands
// over the next: the writes decided meanwhile gather into that one. Every
// entry costs each node a log sync and a message per follower, whatever
// it holds, so fewer and larger entries are what makes a replicated
// write cheap; the clients' requests wait about as long, for the
// commit of the batch before theirs instead of for the leader's log
// being busy with it. Once an entry has been applied, the next waits a
// little for the clients it answered (gathering).
func (n *Node) propose() {
	defer n.wg.Done()
	var g gathering
	for {
		select {
		case <-n.wake:
		case <-n.stop:
			return
		}
		n.gather(&g)
		n.mu.Lock()
		body, count, ids := n.batch, n.count, n.ids
		n.batch, n.count, n.ids = nil, 0, nil
		asked, returning := 0, 0
		if count > 0 {
			asked, returning = n.returns.propose()
		}
		ready := n.ready
		n.mu.Unlock()
		if count == 0 {
			continue
		}
		if !ready {
			n.abandon(ids)
			continue
		}
		entry := make([]byte, 0, len(body)+1+binary.MaxVarintLen64)
		entry = append(entry, entryWrites)
		entry = binary.AppendUvarint(entry, uint64(count))
		entry = append(entry, body...)
		// No timeout: a batch that Raft did not take while a later one
		// was taken would let a client's write overtake an earlier one.
		// Raft takes or refuses every batch (it refuses them all once it
		// no longer leads or shuts down). The requests of a committed
		// batch were answered when it was applied; those of a batch Raft
		// did not commit are answered "the state store is unavailable".
		start := time.Now()
		if err := n.await(n.raft.Apply(entry, 0)); err != nil {
			n.log.Debug("writes not committed", "err", err, "requests", len(ids))
			n.abandon(ids)
			n.endEpoch()
			continue
		}
		g.done(asked, returning, n.returns.asked.Load(), time.Since(start))
	}
}

// abandon answers the requests of ids that are still pending.
func (n *Node) abandon(ids []uint64) {
	n.mu.Lock()
	var ops []*engine.Op
	for _, id := range ids {
		if op, ok := n.pending[id]; ok {
			ops = append(ops, op)
			delete(n.pending, id)
		}
	}
	n.mu.Unlock()
	if len(ops) > 0 {
		// Before Abandon: once answered, an op may be reused.
		for _, op := range ops {
			n.endWrite(op)
		}
		n.engine.Abandon(ops)
	}
}

// beginWrite counts a write a client of this node sent to its engine as
// under way, so that the client's later reads wait for it (writeOrder).
// A forwarded write is counted on the node that forwarded it.
func (n *Node) beginWrite(op *engine.Op) {
	if _, forwarded := op.Caller.(*forwardOp); !forwarded {
		n.order.begin(op.Client)
	}
}

// endWrite counts a write that beginWrite counted as answered.
func (n *Node) endWrite(op *engine.Op) {
	if _, forwarded := op.Caller.(*forwardOp); !forwarded {
		n.order.end(op.Client)
	}
}

// takeOp returns the request that a write proposed here answers, if it is
// still waiting.
func (n *Node) takeOp(o origin) *engine.Op {
	if o.node != n.cfg.NodeID || o.epoch != n.epoch {
		return nil
	}
	n.mu.Lock()
	op, ok := n.pending[o.id]
	if ok {
		delete(n.pending, o.id)
	}
	n.mu.Unlock()
	if op != nil {
		// Applied from here on: a read of its client that starts now
		// takes an index at or past it.
		n.endWrite(op)
	}
	return op
}

// watchLeadership follows this node's leadership. A new leader proposes a
// term-start entry and takes writes only once it is applied: then every
// entry of earlier terms is applied too, the clock is above every version
// in the log, and reads may use the commit index.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-n.leaderCh:
			if !leader {
				n.setReady(false)
				n.log.Info("no longer the leader")
				continue
			}
			n.log.Info("elected leader", "term", n.raft.CurrentTerm())
			n.startTerm()
		}
	}
}

// startTerm commits the term-start entry of a new leader and makes it
// ready. Raft may not take the entry in time (its loop is busy writing a
// slow disk): it tries again for as long as the node leads, since a
// leader that never started its term would refuse every write.
func (n *Node) startTerm() {
	for {
		err := n.await(n.raft.Apply([]byte{entryTermStart}, applyTimeout))
		if n.raft.State() != raft.Leader {
			if err != nil {
				n.log.Warn("leadership lost before the term-start entry was committed", "err", err)
			}
			return
		}
		if err == nil {
			n.setReady(true)
			n.log.Info("leader ready", "term", n.raft.CurrentTerm(), "applied", n.fsm.applied.Load())
			return
		}
		n.log.Warn("the term-start entry was not committed; trying again", "err", err)
		select {
		case <-n.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (n *Node) setReady(ready bool) {
	n.mu.Lock()
	ready = ready && !n.closed
	if ready && !n.ready {
		n.readyEpoch++
		if n.readyWait != nil {
			close(n.readyWait)
			n.readyWait = nil
		}
	}
	n.ready = ready
	n.mu.Unlock()
	if !ready {
		select {
		case n.wake <- struct{}{}: // the proposer abandons what is batched
		default:
		}
	}
}

// endEpoch ends this node's leadership epoch after Raft failed to commit
// a batch of its writes: the writes decided after that batch are refused
// (so a client's later write cannot be committed without its earlier
// one), and a leader starts again with a new term-start entry.
func (n *Node) endEpoch() {
	if !n.isReady() {
		return
	}
	n.setReady(false)
	if n.raft.State() == raft.Leader {
		n.log.Warn("writes were not committed; the leader takes writes again once a new entry is committed")
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.startTerm()
		}()
	}
}

// currentReadyEpoch returns the ready epoch, 0 while not ready.
func (n *Node) currentReadyEpoch() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.ready {
		return 0
	}
	return n.readyEpoch
}

// awaitReadyEpoch returns the ready epoch once this node is ready, or 0
// if it is not by deadline.
func (n *Node) awaitReadyEpoch(deadline time.Time) uint64 {
	for {
		n.mu.Lock()
		if n.ready {
			e := n.readyEpoch
			n.mu.Unlock()
			return e
		}
		if n.readyWait == nil {
			n.readyWait = make(chan struct{})
		}
		ch := n.readyWait
		n.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
			t.Stop()
		case <-t.C:
			return 0
		case <-n.stop:
			t.Stop()
			return 0
		}
	}
}

func (n *Node) isReady() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// leaderAddr returns the address at which this node reaches the leader:
// the address its --peers list gives the leader's id, which may differ
// from the address the leader reports (a proxy, another interface), or
// else the reported one. "" when no other node is known to lead.
func (n *Node) leaderAddr() string {
	addr, id := n.raft.LeaderWithID()
	if addr == "" || string(id) == n.cfg.NodeID {
		// None, or this node, elected but not ready yet: ask again soon.
		return ""
	}
	for _, p := range n.cfg.Peers {
		if p.ID == string(id) {
			return p.Addr
		}
	}
	return string(addr)
}

// ReplicationWait is how long a client's request waits for a change of
// the replicated broker state (a claim of a client id, a route, a
// retained message) to be in effect on every reachable node before it
// goes on without that assurance: five heartbeat timeouts, at least 2 s.
// A cluster whose timeouts were raised for a slow or loaded machine
// commits slowly there too; a wait that ran out sooner would let a
// message or a session be lost to a change that was merely late.
func (n *Node) ReplicationWait() time.Duration {
	return max(2*time.Second, 5*n.cfg.HeartbeatTimeout)
}

// HasLeader reports whether this node knows a leader of the cluster, for
// a readiness check.
func (n *Node) HasLeader() bool {
	if n.raft == nil {
		return false
	}
	addr, _ := n.raft.LeaderWithID()
	return addr != ""
}

// ErrNoLeader is the readiness error of a node that knows no leader: it
// answers every write and linearizable read "the state store is
// unavailable" until one is elected.
var ErrNoLeader = errors.New("cluster: no leader is known (an election is under way, or no majority of the members is reachable)")

// ErrTermNotStarted is the readiness error of a node whose leader has
// not yet committed the entry that starts its term, or that has not yet
// applied it: writes and linearizable reads wait for it.
var ErrTermNotStarted = errors.New("cluster: the leader's term has not started here yet (its first entry is not yet committed and applied on this node)")

// Ready reports, for /readyz, whether the node serves writes and
// linearizable reads without waiting: it knows a leader, and it has
// applied the entry that starts the leader's term.
func (n *Node) Ready() error {
	if !n.HasLeader() {
		return ErrNoLeader
	}
	if n.fsm.startedTerm.Load() < n.raft.CurrentTerm() {
		return ErrTermNotStarted
	}
	return nil
}

// Submit carries out op, as broker.Store asks: KEYNOTIFY and stale reads
// on this node's engine at once; writes on the leader's engine, forwarded
// there when this node is a follower; linearizable reads (GET, and each
// page of a SCAN) once this node's machine has applied the leader's commit
// index. It never blocks.
func (n *Node) Submit(ctx context.Context, op *engine.Op) bool {
	switch op.Request.Verb {
	case wire.VerbSet, wire.VerbDel, wire.VerbVDel:
		if n.StorageErr() != nil {
			// What this node's files hold is not what a restart needs:
			// it acknowledges nothing more, whoever would apply it.
			return answerNow(op, wire.ErrUnavailable)
		}
		if n.isReady() && n.fwd.idle() {
			return n.engine.Submit(ctx, op)
		}
		// A follower, a leader that is not ready yet, or one whose
		// forwarded writes of before it led are not all answered: the
		// write goes to the leader behind them once there is one.
		return n.forward(ctx, op)
	case wire.VerbGet, wire.VerbKeyInfo, wire.VerbScan:
		if op.Stale {
			return n.readStale(ctx, op)
		}
		return n.read(ctx, op)
	}
	return n.engine.Submit(ctx, op)
}

// answerNow answers op on the submitter's goroutine.
func answerNow(op *engine.Op, err *wire.Error) bool {
	op.Result = engine.Result{Err: err}
	op.Inline = true
	op.Done(op)
	return true
}

// admit counts a request that will wait on the cluster, or answers it
// busy.
func (n *Node) admit(op *engine.Op) bool {
	if n.inflight.Add(1) > int64(n.cfg.MaxInFlight) {
		n.inflight.Add(-1)
		answerNow(op, wire.ErrBusy)
		return false
	}
	return true
}

// finish answers op, which waited on the cluster, on the engine's delivery
// goroutine, after everything applied so far.
func (n *Node) finish(op *engine.Op) {
	n.inflight.Add(-1)
	n.engine.Deliver(op)
}

// closeStores closes the Raft log and the stable store.
func (n *Node) closeStores() error { return errors.Join(n.disk.Close(), n.stable.Close()) }

// transportConfig is the configuration of the Raft transport over stream.
func transportConfig(stream raft.StreamLayer, logger hclog.Logger) *raft.NetworkTransportConfig {
	return &raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 4,
		Timeout: 2 * time.Second,
		Logger:  logger,
		// One AppendEntries in flight to a follower: hashicorp/raft's
		// pipelined replication can deadlock when a follower refuses an
		// entry (its response decoder stops while the sender waits to
		// queue the next request); the follower then gets heartbeats
		// but no entry until the leader restarts, and the leader's
		// shutdown hangs. Node.propose keeps one entry in flight anyway,
		// so the pipeline bought nothing here.
		MaxRPCsInFlight: 1,
	}
}

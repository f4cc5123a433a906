package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"sync"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/pubsub"
)

// How the proposer of the broker's metadata paces itself.
const (
	// metaRetry is the pause after a batch did not commit.
	metaRetry = 100 * time.Millisecond
	// metaTick is how often the proposer looks again without being
	// woken: for batches to retry and the leader's chores.
	metaTick = 500 * time.Millisecond
	// metaFullEvery is how many ticks pass between comparisons of every
	// local filter with the routes the replicated state holds.
	metaFullEvery = 20
	// metaChores is how often the leader expires sessions and removes
	// what nodes that left the cluster held.
	metaChores = 5 * time.Second
	// metaWait bounds how long a proposal waits for its commit.
	metaWait = 2 * time.Second
)

// metaSync proposes this node's changes of the broker's replicated
// metadata (package pubsub), one batch at a time, in the order they were
// made, and keeps what did not commit for the next batch: a node whose
// proposals fail while it has no majority proposes them once it has one
// again (docs/adr/0009-one-broker-across-the-cluster.md).
//
// Routes are not queued but compared: the filters with local subscribers
// against the routes the replicated state holds for this node, for the
// filters that changed (and every filter, now and then), so that the
// routes converge to the local subscriptions whatever was lost.
type metaSync struct {
	n *Node

	// quit ends the proposer before Raft stops (stop): a proposal Raft
	// took into its queue and never read before its shutdown is never
	// answered, and the proposer would wait for it for good.
	quit    chan struct{}
	stopped chan struct{} // closed when run returns
	running atomic.Bool

	mu       sync.Mutex
	want     map[string]struct{}   // guarded by mu; filters with local subscribers
	dirty    map[string]struct{}   // guarded by mu; filters to compare with the state
	gen      uint64                // guarded by mu; counts changes of want
	synced   uint64                // guarded by mu; changes of want up to this are committed
	syncedAt uint64                // guarded by mu; the index that committed them
	barrier  uint64                // guarded by mu; every reachable peer applied this index
	full     bool                  // guarded by mu; compare every filter next round
	waiters  []routeWaiter         // guarded by mu
	retained map[string]*retainReq // guarded by mu; the newest change of each topic not yet committed
	sessions []sessionReq          // guarded by mu; in order
	started  bool                  // guarded by mu; this process's NodeStarted is committed
	chores   time.Time             // guarded by mu; when the leader's chores are due

	wake chan struct{}
}

type routeWaiter struct {
	gen uint64
	ch  chan uint64 // the index at which the routes are committed
}

type retainReq struct {
	stamp   hlc.Timestamp
	msg     []byte
	expires int64
	at      int64
	waiters []func(error)
}

// sessionReq is a change of a client id's ownership or session.
type sessionReq struct {
	claim      *pubsub.Claim // a claim; else one of the others
	client     string
	stamp      hlc.Timestamp
	subs       []byte // subscriptions, when release is false
	release    bool
	persistent bool
	expiry     uint32
	at         int64
	done       func(error)
}

func newMetaSync(n *Node) *metaSync {
	return &metaSync{
		n:        n,
		want:     map[string]struct{}{},
		dirty:    map[string]struct{}{},
		retained: map[string]*retainReq{},
		full:     true,
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		stopped:  make(chan struct{}),
	}
}

func (m *metaSync) start() {
	m.running.Store(true)
	m.n.wg.Add(1)
	go m.run()
}

// stop ends the proposer once its round under way is over; Raft still
// runs, so that round ends.
func (m *metaSync) stop() {
	close(m.quit)
	if m.running.Load() {
		<-m.stopped
	}
}

func (m *metaSync) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *metaSync) run() {
	defer m.n.wg.Done()
	defer close(m.stopped)
	tick := time.NewTicker(metaTick)
	defer tick.Stop()
	ticks := 0
	for {
		select {
		case <-m.wake:
		case <-tick.C:
			ticks++
			if ticks%metaFullEvery == 0 {
				m.mu.Lock()
				m.full = true
				m.mu.Unlock()
			}
		case <-m.n.stop:
			return
		case <-m.quit:
			return
		}
		if !m.round() {
			select {
			case <-time.After(metaRetry):
			case <-m.n.stop:
				return
			case <-m.quit:
				return
			}
		}
	}
}

// round proposes one batch of what is pending and reports whether it
// committed (or there was nothing to propose).
func (m *metaSync) round() bool {
	self := m.n.cfg.NodeID
	now := time.Now().UnixMilli()
	var b pubsub.Batch
	m.mu.Lock()
	started := m.started
	if !started {
		b.NodeStarted(self, m.n.epoch, now)
	}
	gen := m.gen
	add, remove := m.routeDeltaLocked()
	retained := m.retained
	m.retained = map[string]*retainReq{}
	sessions := m.sessions
	m.sessions = nil
	chores := m.n.raft.State() == raft.Leader && !time.Now().Before(m.chores)
	if chores {
		m.chores = time.Now().Add(metaChores)
	}
	m.mu.Unlock()

	if len(add)+len(remove) > 0 {
		b.Routes(self, add, remove)
	}
	for topic, r := range retained {
		b.Retain(topic, r.stamp, r.msg, r.expires, r.at)
	}
	for _, s := range sessions {
		switch {
		case s.claim != nil:
			b.Claim(*s.claim)
		case s.release:
			b.Release(s.client, s.stamp, s.persistent, s.expiry, s.at)
		default:
			b.Subscriptions(s.client, s.stamp, s.subs)
		}
	}
	if chores {
		m.leaderChores(&b, now)
	}
	if b.Len() == 0 {
		m.mu.Lock()
		m.routesSyncedLocked(gen, m.n.fsm.applied.Load())
		m.mu.Unlock()
		return true
	}
	index, err := m.n.proposePubSub(b.Bytes())
	if err != nil {
		m.n.log.Debug("broker metadata not committed; proposing again", "err", err, "commands", b.Len())
		m.mu.Lock()
		for _, f := range add {
			m.dirty[f] = struct{}{}
		}
		for _, f := range remove {
			m.dirty[f] = struct{}{}
		}
		for topic, r := range retained {
			if cur, ok := m.retained[topic]; ok && cur.stamp.After(r.stamp) {
				cur.waiters = append(cur.waiters, r.waiters...)
			} else {
				m.retained[topic] = r
			}
		}
		m.sessions = append(sessions, m.sessions...)
		m.mu.Unlock()
		return false
	}
	m.mu.Lock()
	m.started = true
	m.routesSyncedLocked(gen, index)
	m.mu.Unlock()
	var waiters []func(error)
	for _, r := range retained {
		waiters = append(waiters, r.waiters...)
	}
	for _, s := range sessions {
		if s.done != nil {
			waiters = append(waiters, s.done)
		}
	}
	if len(waiters) > 0 {
		// A retained message is in effect once every reachable node has
		// it: its publisher's acknowledgement waits for that. So is a
		// claim of a client id: the CONNACK that waits for it goes once
		// the node the client connects to next knows the session.
		m.n.wg.Add(1)
		go func() {
			defer m.n.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), awaitAppliedWait)
			err := m.n.awaitPeersApplied(ctx, index)
			cancel()
			for _, w := range waiters {
				w(err)
			}
		}()
	}
	return true
}

// routeDeltaLocked returns the routes to add and remove: the filters to
// compare whose presence here differs from the replicated state's.
func (m *metaSync) routeDeltaLocked() (add, remove []string) {
	self := m.n.cfg.NodeID
	if m.full {
		m.full = false
		for f := range m.want {
			m.dirty[f] = struct{}{}
		}
		for _, f := range m.n.ps.Routes(self) {
			m.dirty[f] = struct{}{}
		}
	}
	for f := range m.dirty {
		_, want := m.want[f]
		have := m.n.ps.HasRoute(self, f)
		switch {
		case want && !have:
			add = append(add, f)
		case !want && have:
			remove = append(remove, f)
		}
		delete(m.dirty, f)
	}
	return add, remove
}

// routesSyncedLocked records that the route changes up to gen are in the
// state at index, and wakes their waiters.
func (m *metaSync) routesSyncedLocked(gen, index uint64) {
	if gen <= m.synced {
		return
	}
	m.synced, m.syncedAt = gen, index
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if w.gen <= gen {
			w.ch <- index
		} else {
			kept = append(kept, w)
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
}

// leaderChores adds to b what only the leader proposes: the expiry of
// sessions whose connection ended longer ago than their expiry and of
// retained messages past theirs, and the removal of what nodes that are
// no longer members held.
func (m *metaSync) leaderChores(b *pubsub.Batch, now int64) {
	if exp := m.n.ps.Expired(now, 1024); len(exp) > 0 {
		b.Expire(exp)
	}
	if exp := m.n.ps.ExpiredRetained(now*int64(time.Millisecond), 1024); len(exp) > 0 {
		b.ExpireRetained(exp, now)
	}
	f := m.n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	members := map[string]bool{}
	for _, s := range f.Configuration().Servers {
		members[string(s.ID)] = true
	}
	for _, node := range m.n.ps.NodesWithState() {
		if !members[node] {
			m.n.log.Info("the routes and sessions of a node that left the cluster are removed", "node", node)
			b.DropNode(node, now)
		}
	}
}

// RouteChanged records that filter got its first local subscriber
// (present) or lost its last one. It does not block: the route is
// proposed by the next batch (see SyncRoutes).
func (n *Node) RouteChanged(filter string, present bool) {
	m := n.meta
	m.mu.Lock()
	if present {
		m.want[filter] = struct{}{}
	} else {
		delete(m.want, filter)
	}
	m.dirty[filter] = struct{}{}
	m.gen++
	m.mu.Unlock()
	m.signal()
}

// SyncRoutes waits until every route change made before the call is
// committed and applied here and by every other member this node reaches
// over its message streams, or ctx ends (its error is returned). A
// SUBACK sent after it returns nil holds on every reachable node: a
// message published there reaches the new subscriber.
func (n *Node) SyncRoutes(ctx context.Context) error {
	m := n.meta
	m.mu.Lock()
	gen := m.gen
	if gen <= m.synced {
		index := m.syncedAt
		done := index <= m.barrier
		m.mu.Unlock()
		if done {
			return nil
		}
		return n.routesBarrier(ctx, index)
	}
	ch := make(chan uint64, 1)
	m.waiters = append(m.waiters, routeWaiter{gen: gen, ch: ch})
	m.mu.Unlock()
	m.signal()
	select {
	case index := <-ch:
		return n.routesBarrier(ctx, index)
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stop:
		return errClosed
	}
}

// routesBarrier waits until the reachable peers applied index, and
// remembers it.
func (n *Node) routesBarrier(ctx context.Context, index uint64) error {
	if err := n.awaitPeersApplied(ctx, index); err != nil {
		return err
	}
	m := n.meta
	m.mu.Lock()
	m.barrier = max(m.barrier, index)
	m.mu.Unlock()
	return nil
}

// TakeSessionArgs asks the node that held a client id for its session.
type TakeSessionArgs struct {
	Client string
	Owner  string
	Stamp  hlc.Timestamp
	Clean  bool
}

// TakeSessionReply is the session handed over.
type TakeSessionReply struct {
	Session []byte
	OK      bool
}

// TakeSession hands this node's session of a client id to the node that
// took the id.
func (s *service) TakeSession(args *TakeSessionArgs, reply *TakeSessionReply) error {
	if s.n.broker == nil {
		return nil
	}
	reply.Session, reply.OK = s.n.broker.TakeSession(args.Client, args.Owner, args.Stamp, args.Clean)
	return nil
}

// FetchSession asks node for its session of client, which a connection
// of this node stamped stamp, authenticated as owner, takes over: node
// ends its connection and removes the session, and returns it (nothing
// with clean set). ok is false when node had none of owner.
func (n *Node) FetchSession(ctx context.Context, node, client, owner string, stamp hlc.Timestamp, clean bool) ([]byte, bool, error) {
	addr := n.peerAddr(node)
	if addr == "" {
		return nil, false, errNoAddress
	}
	var reply TakeSessionReply
	if err := n.peers.do(ctx, addr, "Cluster.TakeSession", &TakeSessionArgs{Client: client, Owner: owner, Stamp: stamp, Clean: clean}, &reply); err != nil {
		return nil, false, err
	}
	return reply.Session, reply.OK, nil
}

// Retain proposes topic's retained message (msg nil: cleared) as of
// stamp, expiring at expires (Unix nanoseconds; 0 for never). done, if
// not nil, is called once it is committed and applied here and by every
// member reachable over the message streams (with the error of that wait,
// if any), or a newer change of topic from this node is; it is not called
// while no majority commits it.
func (n *Node) Retain(topic string, stamp hlc.Timestamp, msg []byte, expires int64, done func(error)) {
	m := n.meta
	m.mu.Lock()
	r := &retainReq{stamp: stamp, msg: msg, expires: expires, at: time.Now().UnixMilli()}
	if done != nil {
		r.waiters = append(r.waiters, done)
	}
	if cur, ok := m.retained[topic]; ok {
		if cur.stamp.After(stamp) {
			cur.waiters = append(cur.waiters, r.waiters...)
			r = cur
		} else {
			r.waiters = append(cur.waiters, r.waiters...)
		}
	}
	m.retained[topic] = r
	m.mu.Unlock()
	m.signal()
}

// Claim proposes that a connection of this node took a client id. done,
// if not nil, is called once the claim is committed and every reachable
// node applied it (with the error if that was not confirmed in time).
func (n *Node) Claim(c pubsub.Claim, done func(error)) {
	n.queueSession(sessionReq{claim: &c, done: done})
}

// SessionSubscriptions proposes the subscriptions of the persistent
// session of client that the connection stamped stamp holds. done, if not
// nil, is called as for a claim: once every reachable node applied them.
func (n *Node) SessionSubscriptions(client string, stamp hlc.Timestamp, subs []byte, done func(error)) {
	m := n.meta
	m.mu.Lock()
	// A newer list of the same connection replaces one not yet proposed.
	for i := range m.sessions {
		s := &m.sessions[i]
		if s.claim == nil && !s.release && s.client == client && s.stamp == stamp {
			s.subs = subs
			if prev := s.done; prev != nil && done != nil {
				s.done = func(err error) { prev(err); done(err) }
			} else if done != nil {
				s.done = done
			}
			m.mu.Unlock()
			m.signal()
			return
		}
	}
	m.sessions = append(m.sessions, sessionReq{client: client, stamp: stamp, subs: subs, done: done})
	m.mu.Unlock()
	m.signal()
}

// Release proposes that the connection of client stamped stamp ended:
// its session is kept for expiry seconds when persistent.
func (n *Node) Release(client string, stamp hlc.Timestamp, persistent bool, expiry uint32) {
	n.queueSession(sessionReq{client: client, stamp: stamp, release: true, persistent: persistent, expiry: expiry, at: time.Now().UnixMilli()})
}

func (n *Node) queueSession(r sessionReq) {
	m := n.meta
	m.mu.Lock()
	m.sessions = append(m.sessions, r)
	m.mu.Unlock()
	m.signal()
}

// ProposeArgs carries a batch of the broker's metadata to the leader.
type ProposeArgs struct {
	Batch []byte
}

// proposePubSub commits a batch of the broker's metadata through the
// leader (this node, or by a call to it) and waits until this node has
// applied it. It returns the entry's index.
func (n *Node) proposePubSub(batch []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), metaWait)
	defer cancel()
	var index uint64
	if n.raft.State() == raft.Leader {
		i, err := n.applyPubSub(batch)
		if err != nil {
			return 0, err
		}
		index = i
	} else {
		addr := n.leaderAddr()
		if addr == "" {
			return 0, ErrNoLeader
		}
		if err := n.peers.do(ctx, addr, "Cluster.ProposePubSub", &ProposeArgs{Batch: batch}, &index); err != nil {
			return 0, err
		}
	}
	applied := make(chan bool, 1)
	n.fsm.afterApplied(index, func() { applied <- true }, func() { applied <- false })
	select {
	case ok := <-applied:
		if !ok {
			return 0, errClosed
		}
		return index, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// applyPubSub commits a batch on the leader.
func (n *Node) applyPubSub(batch []byte) (uint64, error) {
	entry := make([]byte, 0, 1+len(batch))
	entry = append(append(entry, entryPubSub), batch...)
	f := n.raft.Apply(entry, metaWait)
	if err := n.await(f); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// ProposePubSub commits a follower's batch of the broker's metadata.
func (s *service) ProposePubSub(args *ProposeArgs, index *uint64) error {
	if s.n.raft.State() != raft.Leader {
		return raft.ErrNotLeader
	}
	i, err := s.n.applyPubSub(args.Batch)
	*index = i
	return err
}

// AwaitAppliedArgs asks a node to answer once it has applied Index.
type AwaitAppliedArgs struct {
	Index uint64
}

// awaitAppliedWait bounds how long a node holds a call of AwaitApplied.
const awaitAppliedWait = time.Second

// AwaitApplied answers once this node has applied args.Index, or fails
// after awaitAppliedWait.
func (s *service) AwaitApplied(args *AwaitAppliedArgs, _ *struct{}) error {
	ch := make(chan bool, 1)
	s.n.fsm.afterApplied(args.Index, func() { ch <- true }, func() { ch <- false })
	select {
	case ok := <-ch:
		if !ok {
			return errClosed
		}
		return nil
	case <-time.After(awaitAppliedWait):
		return errors.New("cluster: the entry is not applied here yet")
	case <-s.n.stop:
		return errClosed
	}
}

// awaitPeersApplied waits until every member whose message stream is up
// has applied index, or ctx ends. A member that cannot be reached is not
// waited for: what it misses it applies when it is back.
func (n *Node) awaitPeersApplied(ctx context.Context, index uint64) error {
	peers := n.relay.reachablePeers()
	if len(peers) == 0 {
		return nil
	}
	errs := make(chan error, len(peers))
	for _, addr := range peers {
		go func() {
			errs <- n.peers.do(ctx, addr, "Cluster.AwaitApplied", &AwaitAppliedArgs{Index: index}, &struct{}{})
		}()
	}
	var first error
	for range peers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

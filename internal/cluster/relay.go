package cluster

import (
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRelayBuffer is the default of Config.RelayBuffer.
const DefaultRelayBuffer = 64 << 20

// The pace of the message streams between nodes.
const (
	// relayDialTimeout bounds a connection to a peer: the cluster is on
	// a LAN.
	relayDialTimeout = 500 * time.Millisecond
	// relayAckWait is how long a stream waits for the acknowledgement of
	// what it wrote (messages, or a ping) before it takes the peer for
	// unreachable and connects again.
	relayAckWait = 2 * time.Second
	// relayPingEvery is how often an idle stream checks that its peer
	// answers.
	relayPingEvery = 500 * time.Millisecond
	// relayRedial and relayRedialMax bound the pause between attempts to
	// connect to a peer that cannot be reached.
	relayRedial    = 100 * time.Millisecond
	relayRedialMax = 2 * time.Second
	// relayMaxFrame bounds the messages a stream writes at once.
	relayMaxFrame = 1 << 20
	// relayAckEvery and relayAckAfter bound the messages, and the time,
	// the receiver of a stream delivers before it acknowledges them
	// while more frames wait in its buffer (see relay.serve).
	relayAckEvery = 256
	relayAckAfter = 5 * time.Millisecond
	// relayQuietStart is how long a peer that was never reached may be
	// away before it is logged as unreachable: the nodes of a cluster
	// start one after the other.
	relayQuietStart = 5 * time.Second
)

// relay carries the MQTT messages this node routes to the other nodes
// that have matching routes, over one stream per peer (connection kind
// connRelay), and delivers to this node's broker the messages the other
// nodes send it (docs/adr/0009-one-broker-across-the-cluster.md).
type relay struct {
	n *Node

	mu     sync.Mutex
	links  map[string]*link     // guarded by mu; by peer id
	recv   map[string]*receiver // guarded by mu; by sending peer id
	closed bool                 // guarded by mu

	sent, received, expired atomic.Int64
	dropped                 atomic.Int64 // messages for a peer dropped: QoS 0 while it is unreachable, or past the buffer

	stop chan struct{}
	wg   sync.WaitGroup
}

func newRelay(n *Node) *relay {
	return &relay{n: n, links: map[string]*link{}, recv: map[string]*receiver{}, stop: make(chan struct{})}
}

// start keeps a stream to every other member, so that an unreachable
// peer is known before a message is routed to it.
func (r *relay) start() {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			r.syncMembers()
			select {
			case <-t.C:
			case <-r.stop:
				return
			}
		}
	}()
}

// syncMembers opens streams to the members that have none and ends those
// to nodes that are no longer members.
func (r *relay) syncMembers() {
	f := r.n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	members := map[string]bool{}
	for _, s := range f.Configuration().Servers {
		if id := string(s.ID); id != r.n.cfg.NodeID {
			members[id] = true
			r.link(id)
		}
	}
	r.mu.Lock()
	var gone []*link
	for id, l := range r.links {
		if !members[id] {
			gone = append(gone, l)
			delete(r.links, id)
		}
	}
	r.mu.Unlock()
	for _, l := range gone {
		l.end()
	}
}

// link returns the stream to peer, started if there was none; nil once
// the relay is closed.
func (r *relay) link(peer string) *link {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	if l, ok := r.links[peer]; ok {
		return l
	}
	l := newLink(r, peer)
	r.links[peer] = l
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		l.run()
	}()
	return l
}

func (r *relay) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	links := make([]*link, 0, len(r.links))
	for _, l := range r.links {
		links = append(links, l)
	}
	r.mu.Unlock()
	close(r.stop)
	for _, l := range links {
		l.end()
	}
	r.wg.Wait()
}

// reachablePeers returns the addresses of the peers whose stream is up.
func (r *relay) reachablePeers() []string {
	r.mu.Lock()
	links := make([]*link, 0, len(r.links))
	for _, l := range r.links {
		links = append(links, l)
	}
	r.mu.Unlock()
	var addrs []string
	for _, l := range links {
		if l.isUp() {
			if addr := r.n.peerAddr(l.peer); addr != "" {
				addrs = append(addrs, addr)
			}
		}
	}
	return addrs
}

// peerAddr returns the address this node reaches member id at: the one
// its --peers list gives id, or else the one in the configuration; ""
// for none.
func (n *Node) peerAddr(id string) string {
	for _, p := range n.cfg.Peers {
		if p.ID == id {
			return p.Addr
		}
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return ""
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return string(s.Address)
		}
	}
	return ""
}

// Dest is a node a message goes to, and the shared subscriptions ($share/
// {group}/{filter}) it serves the message to.
type Dest struct {
	Node   string
	Groups []string
}

// relayWait counts the peers that have yet to acknowledge one message; the
// last calls done.
type relayWait struct {
	pending atomic.Int32
	done    func()
}

func (w *relayWait) release() {
	if w.pending.Add(-1) == 0 {
		w.done()
	}
}

// Send sends msg, a message of QoS qos that expires at expires (Unix
// nanoseconds; 0 for never), to the nodes of dests. It does not block.
// When done is not nil, qos is 1 or 2 and some peer that is reachable
// now is to take it, Send returns true and calls done once each such
// peer has it in its subscribers' sessions, or has been found
// unreachable (the message then waits in the buffer for that peer);
// otherwise it returns false and never calls done. msg must not change
// afterwards.
func (n *Node) Send(dests []Dest, msg []byte, qos byte, expires int64, done func()) bool {
	var w *relayWait
	if qos > 0 && done != nil {
		w = &relayWait{done: done}
		w.pending.Store(1)
	}
	for _, d := range dests {
		l := n.relay.link(d.Node)
		if l == nil {
			continue
		}
		it := &relayItem{qos: qos, expires: expires, groups: d.Groups, msg: msg, size: int64(len(msg) + 64)}
		if w != nil {
			w.pending.Add(1)
		}
		if !l.enqueue(it, w) && w != nil {
			w.pending.Add(-1)
		}
	}
	if w == nil {
		return false
	}
	return w.pending.Add(-1) != 0
}

// RelayPeer is the stream of messages to one peer, for the status.
type RelayPeer struct {
	ID string
	// Up while the peer acknowledges what it is sent; Since is when it
	// last changed, Err why it is down.
	Up    bool
	Since time.Time
	Err   string
	// Buffered messages (and their bytes) not yet acknowledged.
	Buffered      int
	BufferedBytes int64
}

// RelayPeers returns the state of the stream to each peer.
func (n *Node) RelayPeers() []RelayPeer {
	r := n.relay
	r.mu.Lock()
	links := make([]*link, 0, len(r.links))
	for _, l := range r.links {
		links = append(links, l)
	}
	r.mu.Unlock()
	out := make([]RelayPeer, 0, len(links))
	for _, l := range links {
		out = append(out, l.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// dialRelay opens a stream to peer.
func (r *relay) dialRelay(peer string) (net.Conn, error) {
	addr := r.n.peerAddr(peer)
	if addr == "" {
		return nil, errNoAddress
	}
	c, err := r.n.mux.dial(addr, connRelay, relayDialTimeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(relayAckWait))
	if _, err := c.Write(appendRelayHeader(nil, relayHeader{node: r.n.cfg.NodeID, epoch: r.n.epoch})); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// membershipTimeout bounds a membership change.
const membershipTimeout = 10 * time.Second

// MemberArgs names a member to add or remove.
type MemberArgs struct {
	ID   string
	Addr string // for an addition
	// Force skips the leader's check that the change leaves a majority
	// of reachable voters and that a new member answers.
	Force bool
}

// ErrNoSuchMember refuses the removal of a node that is not a member.
var ErrNoSuchMember = errors.New("no such member")

// LocalStatus is what one node knows of itself.
type LocalStatus struct {
	ID           string
	State        string // Leader, Follower, Candidate, Shutdown
	Term         uint64
	LastIndex    uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Leader       string // the leader's id, "" when none is known
	// Members are the ids of the voters and non-voters of the node's
	// latest configuration.
	Members []string
}

// MemberStatus is one member as the node asked for the status sees it.
type MemberStatus struct {
	ID    string
	Addr  string
	Voter bool
	// Local is the member's own status; Err says why it is missing.
	Local LocalStatus
	Err   string
	// Lag is how many entries the member's machine is behind the
	// leader's commit index.
	Lag uint64
	// Messages is how the node asked reaches the member with MQTT
	// messages: "up", "down" (since MessagesSince, for MessagesErr), or
	// "" for the node asked itself. Buffered messages wait for it there.
	Messages      string
	MessagesSince time.Time
	MessagesErr   string
	Buffered      int
	// Routes is how many routes (filters with subscribers) the member has
	// in the broker's replicated state.
	Routes int
}

// Status is the cluster as one node sees it.
type Status struct {
	// Self is the id of the node asked.
	Self string
	// NotMember says that Self is not a member: neither its own latest
	// configuration nor the leader's (when a member reports leading)
	// lists it. It was removed, or has not been added yet.
	NotMember bool
	// ClaimedLeader is the member that reports itself the leader when
	// Self knows none (a removed node hears no heartbeats).
	ClaimedLeader string
	Leader        string
	LeaderAddr    string
	Term          uint64
	CommitIndex   uint64
	Members       []MemberStatus
	// Retained and ClientIDs count the retained messages and the client
	// ids (connected, or of persistent sessions) of the broker's
	// replicated state, as the node asked has it.
	Retained  int
	ClientIDs int
}

// local returns this node's own status.
func (n *Node) local() LocalStatus {
	_, leader := n.raft.LeaderWithID()
	var members []string
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			members = append(members, string(s.ID))
		}
	}
	return LocalStatus{
		Members:      members,
		ID:           n.cfg.NodeID,
		State:        n.raft.State().String(),
		Term:         n.raft.CurrentTerm(),
		LastIndex:    n.raft.LastIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.applied.Load(),
		Leader:       string(leader),
	}
}

// Status gathers the status of every member.
func (n *Node) Status(ctx context.Context) (Status, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return Status{}, err
	}
	addr, id := n.raft.LeaderWithID()
	st := Status{Self: n.cfg.NodeID, Leader: string(id), LeaderAddr: string(addr), Term: n.raft.CurrentTerm()}
	servers := f.Configuration().Servers
	st.Members = make([]MemberStatus, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		m := &st.Members[i]
		m.ID, m.Addr, m.Voter = string(s.ID), string(s.Address), s.Suffrage == raft.Voter
		if m.ID == n.cfg.NodeID {
			m.Local = n.local()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A reply that comes after ctx ended is written into local,
			// which nobody reads any more.
			var local LocalStatus
			if err := n.peers.do(ctx, m.Addr, "Cluster.Local", struct{}{}, &local); err != nil {
				m.Err = err.Error()
			} else {
				m.Local = local
			}
		}()
	}
	wg.Wait()
	st.NotMember = true
	for _, s := range servers {
		if string(s.ID) == n.cfg.NodeID {
			st.NotMember = false
		}
	}
	for _, m := range st.Members {
		if st.Leader == "" && m.Err == "" && m.Local.State == raft.Leader.String() {
			// This node hears no heartbeats (it was removed, or is cut
			// off), yet a member leads: report both.
			st.ClaimedLeader = m.ID
			if !slices.Contains(m.Local.Members, n.cfg.NodeID) {
				st.NotMember = true
			}
		}
		if (m.ID == st.Leader || m.ID == st.ClaimedLeader) && m.Err == "" {
			st.CommitIndex = m.Local.CommitIndex
		}
	}
	for i := range st.Members {
		m := &st.Members[i]
		if m.Err == "" && st.CommitIndex > m.Local.AppliedIndex {
			m.Lag = st.CommitIndex - m.Local.AppliedIndex
		}
	}
	n.brokerStatus(&st)
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	return st, nil
}

// brokerStatus adds the broker's part to st: how this node reaches each
// member with messages, and the replicated routes, retained messages and
// client ids.
func (n *Node) brokerStatus(st *Status) {
	links := map[string]RelayPeer{}
	for _, p := range n.RelayPeers() {
		links[p.ID] = p
	}
	routes := n.ps.RouteCounts()
	for i := range st.Members {
		m := &st.Members[i]
		m.Routes = routes[m.ID]
		if m.ID == n.cfg.NodeID {
			continue
		}
		l, ok := links[m.ID]
		switch {
		case !ok:
			m.Messages = "down"
			m.MessagesErr = "no stream yet"
		case l.Up:
			m.Messages, m.MessagesSince = "up", l.Since
		default:
			m.Messages, m.MessagesSince, m.MessagesErr = "down", l.Since, l.Err
		}
		m.Buffered = l.Buffered
	}
	st.Retained = n.ps.RetainedCount()
	st.ClientIDs = n.ps.SessionCount()
}

// changeMembership carries out fn on the leader: here, or by a call to it.
// While no leader is known, or leadership moves while the change is under
// way, it tries again until membershipTimeout has passed, so that a change
// asked for during an election waits for its end instead of failing: a
// change made twice (added again at the same address, removed again) is
// the same change.
func (n *Node) changeMembership(method string, args *MemberArgs, fn func() error) error {
	deadline := time.Now().Add(membershipTimeout)
	for {
		err := n.changeMembershipOnce(method, args, fn)
		if err == nil || !leaderMoved(err) || time.Now().After(deadline) {
			return err
		}
		n.log.Debug("membership change waits for a leader", "err", err)
		select {
		case <-time.After(50 * time.Millisecond):
		case <-n.stop:
			return err
		}
	}
}

// leaderMoved reports whether err says no leader was known, or the node
// asked stopped leading, rather than that the change was refused.
func leaderMoved(err error) bool {
	if errors.Is(err, ErrNoLeader) || errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return true
	}
	// Errors of a call to the leader come back as text.
	var se rpc.ServerError
	if errors.As(err, &se) {
		msg := string(se)
		return msg == ErrNoLeader.Error() || msg == raft.ErrNotLeader.Error() || msg == raft.ErrLeadershipLost.Error()
	}
	// The leader the node knew of stopped answering.
	return errors.Is(err, rpc.ErrShutdown) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED)
}

// changeMembershipOnce carries out fn on the leader known now.
func (n *Node) changeMembershipOnce(method string, args *MemberArgs, fn func() error) error {
	if n.raft.State() == raft.Leader {
		return fn()
	}
	addr := n.leaderAddr()
	if addr == "" {
		return ErrNoLeader
	}
	c, err := n.peers.get(addr)
	if err != nil {
		return err
	}
	var none struct{}
	if err := c.Call(method, args, &none); err != nil {
		n.peers.failed(addr, err)
		return err
	}
	return nil
}

// AddVoter makes the node id at addr a voting member. Unless force is
// set, the leader first checks that the node answers at addr as id and
// that a majority of the voters would answer after the change
// (UnsafeChangeError otherwise).
func (n *Node) AddVoter(id, addr string, force bool) error {
	args := &MemberArgs{ID: id, Addr: addr, Force: force}
	return n.changeMembership("Cluster.AddVoter", args, func() error {
		if !force {
			if err := n.checkAdd(id, addr); err != nil {
				return err
			}
		}
		return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, membershipTimeout).Error()
	})
}

// RemoveServer removes the node id from the cluster. Unless force is set,
// the leader first checks that id is a member and that a majority of the
// voters left would answer (UnsafeChangeError otherwise).
func (n *Node) RemoveServer(id string, force bool) error {
	args := &MemberArgs{ID: id, Force: force}
	return n.changeMembership("Cluster.RemoveServer", args, func() error {
		if !force {
			if err := n.checkRemove(id); err != nil {
				return err
			}
		}
		return n.raft.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error()
	})
}

func (s *service) Local(_ struct{}, reply *LocalStatus) error {
	*reply = s.n.local()
	return nil
}

// statusWait bounds how long the status waits for each member: a member
// cut off by a partition must not keep the answer from the caller, which
// reports it unreachable instead.
const statusWait = 1500 * time.Millisecond

func (s *service) Status(_ struct{}, reply *Status) error {
	ctx, cancel := context.WithTimeout(context.Background(), statusWait)
	defer cancel()
	st, err := s.n.Status(ctx)
	*reply = st
	return err
}

func (s *service) AddVoter(args *MemberArgs, _ *struct{}) error {
	if args.ID == "" || args.Addr == "" {
		return errors.New("a member needs an id and an address")
	}
	return s.n.AddVoter(args.ID, args.Addr, args.Force)
}

func (s *service) RemoveServer(args *MemberArgs, _ *struct{}) error {
	if args.ID == "" {
		return errors.New("a member needs an id")
	}
	return s.n.RemoveServer(args.ID, args.Force)
}

// Admin is a connection to a node's cluster listener for the membership
// and status commands.
type Admin struct {
	c    *rpc.Client
	addr string
	conn *firstBytes
}

// DialAdmin connects to the cluster listener at addr, authenticated with
// secret (nil for a loopback listener without one).
func DialAdmin(ctx context.Context, addr string, secret []byte) (*Admin, error) {
	var cfg *tls.Config
	if len(secret) > 0 {
		c, err := tlsFromSecret(secret)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	m := &mux{tls: cfg, log: slog.Default()}
	timeout := dialTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	conn, err := m.dial(addr, connRPC, timeout)
	if err != nil {
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && bytes.HasPrefix(rh.RecordHeader[:], []byte("HTTP/")) {
			return nil, notClusterListener(addr, "an HTTP server", err)
		}
		return nil, fmt.Errorf("cluster: connect to %s: %w", addr, err)
	}
	fb := &firstBytes{Conn: conn}
	return &Admin{c: rpc.NewClient(fb), addr: addr, conn: fb}, nil
}

func (a *Admin) call(ctx context.Context, method string, args, reply any) error {
	call := a.c.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if call.Error != nil && a.conn.http() {
			// An HTTP server answers the cluster protocol with a 400,
			// which gob reads as garbage.
			return notClusterListener(a.addr, "an HTTP server", call.Error)
		}
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

// notClusterListener explains an answer that is not the cluster
// protocol's.
func notClusterListener(addr, what string, err error) error {
	return fmt.Errorf("cluster: %s answered as %s, not as a dss cluster listener: --cluster-addr takes a node's --cluster-listen address (%w)", addr, what, err)
}

// firstBytes keeps the first bytes read from a connection, to tell what
// answered.
type firstBytes struct {
	net.Conn
	mu    sync.Mutex
	first []byte // guarded by mu
}

func (f *firstBytes) Read(p []byte) (int, error) {
	n, err := f.Conn.Read(p)
	f.mu.Lock()
	if k := min(n, 8-len(f.first)); k > 0 {
		f.first = append(f.first, p[:k]...)
	}
	f.mu.Unlock()
	return n, err
}

// http reports whether the other side spoke HTTP.
func (f *firstBytes) http() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.HasPrefix(f.first, []byte("HTTP/"))
}

// Status returns the cluster's status as the node sees it.
func (a *Admin) Status(ctx context.Context) (Status, error) {
	var st Status
	err := a.call(ctx, "Cluster.Status", struct{}{}, &st)
	return st, err
}

// AddVoter adds a voting member; force skips the leader's safety check
// (see Node.AddVoter).
func (a *Admin) AddVoter(ctx context.Context, id, addr string, force bool) error {
	return a.call(ctx, "Cluster.AddVoter", &MemberArgs{ID: id, Addr: addr, Force: force}, &struct{}{})
}

// RemoveServer removes a member; force skips the leader's safety check
// (see Node.RemoveServer).
func (a *Admin) RemoveServer(ctx context.Context, id string, force bool) error {
	return a.call(ctx, "Cluster.RemoveServer", &MemberArgs{ID: id, Force: force}, &struct{}{})
}

// Close closes the connection.
func (a *Admin) Close() error { return a.c.Close() }

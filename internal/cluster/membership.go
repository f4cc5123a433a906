package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/rpc"
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
}

// LocalStatus is what one node knows of itself.
type LocalStatus struct {
	ID           string
	State        string // Leader, Follower, Candidate, Shutdown
	Term         uint64
	LastIndex    uint64
	CommitIndex  uint64
	AppliedIndex uint64
	Leader       string // the leader's id, "" when none is known
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
}

// Status is the cluster as one node sees it.
type Status struct {
	Leader      string
	LeaderAddr  string
	Term        uint64
	CommitIndex uint64
	Members     []MemberStatus
}

// local returns this node's own status.
func (n *Node) local() LocalStatus {
	_, leader := n.raft.LeaderWithID()
	return LocalStatus{
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
	st := Status{Leader: string(id), LeaderAddr: string(addr), Term: n.raft.CurrentTerm()}
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
	for _, m := range st.Members {
		if m.ID == st.Leader && m.Err == "" {
			st.CommitIndex = m.Local.CommitIndex
		}
	}
	for i := range st.Members {
		m := &st.Members[i]
		if m.Err == "" && st.CommitIndex > m.Local.AppliedIndex {
			m.Lag = st.CommitIndex - m.Local.AppliedIndex
		}
	}
	sort.Slice(st.Members, func(i, j int) bool { return st.Members[i].ID < st.Members[j].ID })
	return st, nil
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

// AddVoter makes the node id at addr a voting member.
func (n *Node) AddVoter(id, addr string) error {
	args := &MemberArgs{ID: id, Addr: addr}
	return n.changeMembership("Cluster.AddVoter", args, func() error {
		return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, membershipTimeout).Error()
	})
}

// RemoveServer removes the node id from the cluster.
func (n *Node) RemoveServer(id string) error {
	args := &MemberArgs{ID: id}
	return n.changeMembership("Cluster.RemoveServer", args, func() error {
		return n.raft.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error()
	})
}

func (s *service) Local(_ struct{}, reply *LocalStatus) error {
	*reply = s.n.local()
	return nil
}

func (s *service) Status(_ struct{}, reply *Status) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := s.n.Status(ctx)
	*reply = st
	return err
}

func (s *service) AddVoter(args *MemberArgs, _ *struct{}) error {
	if args.ID == "" || args.Addr == "" {
		return errors.New("a member needs an id and an address")
	}
	return s.n.AddVoter(args.ID, args.Addr)
}

func (s *service) RemoveServer(args *MemberArgs, _ *struct{}) error {
	if args.ID == "" {
		return errors.New("a member needs an id")
	}
	return s.n.RemoveServer(args.ID)
}

// Admin is a connection to a node's cluster listener for the membership
// and status commands.
type Admin struct {
	c *rpc.Client
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
		return nil, fmt.Errorf("cluster: connect to %s: %w", addr, err)
	}
	return &Admin{c: rpc.NewClient(conn)}, nil
}

func (a *Admin) call(ctx context.Context, method string, args, reply any) error {
	call := a.c.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Status returns the cluster's status as the node sees it.
func (a *Admin) Status(ctx context.Context) (Status, error) {
	var st Status
	err := a.call(ctx, "Cluster.Status", struct{}{}, &st)
	return st, err
}

// AddVoter adds a voting member.
func (a *Admin) AddVoter(ctx context.Context, id, addr string) error {
	return a.call(ctx, "Cluster.AddVoter", &MemberArgs{ID: id, Addr: addr}, &struct{}{})
}

// RemoveServer removes a member.
func (a *Admin) RemoveServer(ctx context.Context, id string) error {
	return a.call(ctx, "Cluster.RemoveServer", &MemberArgs{ID: id}, &struct{}{})
}

// Close closes the connection.
func (a *Admin) Close() error { return a.c.Close() }

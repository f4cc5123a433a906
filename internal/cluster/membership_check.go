package cluster

import (
	"fmt"
	"net/rpc"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// probeTimeout bounds how long the leader waits for a member, or a node
// about to become one, to answer before a membership change counts it
// unreachable.
const probeTimeout = 2 * time.Second

// UnsafeChangeError is a membership change the leader refused because it
// would leave the cluster without a majority of reachable voters, or
// because the node to add does not answer. MemberArgs.Force skips the
// check.
type UnsafeChangeError struct {
	Reason string
}

func (e *UnsafeChangeError) Error() string { return "refused: " + e.Reason }

// voter is one voting member of a configuration.
type voter struct{ id, addr string }

// checkChange refuses a change to the voters after, the configuration
// the change would leave, unless a majority of after answers the leader
// (this node) within probeTimeout. newID, when not empty, is the member
// the change adds at newAddr: it must answer, as the node with that id.
// Like etcd's strict reconfiguration check, it keeps an operator from
// adding a member that is not running (a 3-node cluster with one node
// down that adds a fourth has 2 of 4 and no majority) or removing one
// that the majority needs.
func (n *Node) checkChange(after []voter, newID, newAddr string) error {
	if len(after) == 0 {
		return &UnsafeChangeError{Reason: "the cluster would have no voting member left"}
	}
	type answer struct {
		v   voter
		id  string
		err error
	}
	answers := make([]answer, len(after))
	var wg sync.WaitGroup
	for i, v := range after {
		answers[i].v = v
		if v.id == n.cfg.NodeID {
			answers[i].id = v.id
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].id, answers[i].err = n.probe(v.addr)
		}()
	}
	wg.Wait()
	reachable := 0
	var down []string
	for _, a := range answers {
		switch {
		case a.v.id == newID && a.err != nil:
			return &UnsafeChangeError{Reason: fmt.Sprintf("%s at %s does not answer (%v): start the new node first (with the cluster's --peers, which do not name it), check the address and the cluster secret, or use --force", newID, newAddr, a.err)}
		case a.v.id == newID && a.id != newID:
			return &UnsafeChangeError{Reason: fmt.Sprintf("the node at %s says its id is %q, not %q: give dss cluster add the id of its --node-id", newAddr, a.id, newID)}
		case a.err != nil:
			down = append(down, a.v.id)
		default:
			reachable++
		}
	}
	quorum := len(after)/2 + 1
	if reachable < quorum {
		sort.Strings(down)
		return &UnsafeChangeError{Reason: fmt.Sprintf("the cluster would lose its majority: %d of its %d voters would answer, %d are needed (not answering: %s); bring them back first, or use --force", reachable, len(after), quorum, strings.Join(down, ", "))}
	}
	return nil
}

// probe asks the node at addr for its status and returns its id.
func (n *Node) probe(addr string) (string, error) {
	done := make(chan *rpc.Call, 1)
	var st LocalStatus
	go n.peers.call(addr, "Cluster.Local", struct{}{}, &st, done)
	select {
	case call := <-done:
		if call.Error != nil {
			n.peers.failed(addr, call.Error)
			return "", call.Error
		}
		return st.ID, nil
	case <-time.After(probeTimeout):
		return "", fmt.Errorf("no answer within %v", probeTimeout)
	}
}

// voters returns the voting members of the node's latest configuration.
func (n *Node) voters() ([]voter, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var vs []voter
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			vs = append(vs, voter{id: string(s.ID), addr: string(s.Address)})
		}
	}
	return vs, nil
}

// checkAdd refuses to add id at addr when the node does not answer or the
// cluster would lose its majority. Adding a member again at its address
// changes nothing and passes.
func (n *Node) checkAdd(id, addr string) error {
	vs, err := n.voters()
	if err != nil {
		return err
	}
	after := make([]voter, 0, len(vs)+1)
	for _, v := range vs {
		if v.id == id {
			if v.addr == addr {
				return nil
			}
			continue // the member moves to addr
		}
		after = append(after, v)
	}
	return n.checkChange(append(after, voter{id: id, addr: addr}), id, addr)
}

// checkRemove refuses to remove id when it is no member or the cluster
// would lose its majority without it.
func (n *Node) checkRemove(id string) error {
	vs, err := n.voters()
	if err != nil {
		return err
	}
	after := make([]voter, 0, len(vs))
	found := false
	for _, v := range vs {
		if v.id == id {
			found = true
			continue
		}
		after = append(after, v)
	}
	if !found {
		return fmt.Errorf("%w: %q (the members: %s)", ErrNoSuchMember, id, memberIDs(vs))
	}
	return n.checkChange(after, "", "")
}

func memberIDs(vs []voter) string {
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = v.id
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

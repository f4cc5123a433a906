package cluster

import (
	"log/slog"
	"sync"
	"time"
)

// peerHealth logs when this node stops reaching a peer and when it
// reaches it again, with the number of failures in between, instead of
// the line per failed heartbeat raft writes (five a second while a
// follower is down). A peer that stays unreachable is named again once a
// minute.
type peerHealth struct {
	log *slog.Logger
	// name turns the address raft names a peer by into its id; "" when
	// it is not a member.
	name func(addr string) string

	mu    sync.Mutex
	peers map[string]*peerState // guarded by mu; the peers not reached
}

type peerState struct {
	since    time.Time // the first failure
	logged   time.Time // the last line about it
	failures int
	votes    bool // every failure was a vote request (this node stood for election)
}

// peerRepeat is how often a peer that stays unreachable is logged again.
const peerRepeat = time.Minute

func newPeerHealth(log *slog.Logger, name func(string) string) *peerHealth {
	return &peerHealth{log: log, name: name, peers: make(map[string]*peerState)}
}

// voteFailure is raft's message for a vote request that did not reach
// its peer.
const voteFailure = "failed to make requestVote RPC"

// failed records a failure to reach peer (an id or an address) while
// doing what, with the error raft got.
func (h *peerHealth) failed(peer, what, errText string) {
	if id := h.name(peer); id != "" {
		peer = id
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	s, down := h.peers[peer]
	if !down {
		h.peers[peer] = &peerState{since: now, logged: now, failures: 1, votes: what == voteFailure}
		h.log.Warn("cluster peer unreachable", "peer", peer, "while", what, "err", errText)
		return
	}
	s.failures++
	s.votes = s.votes && what == voteFailure
	if now.Sub(s.logged) >= peerRepeat {
		s.logged = now
		h.log.Warn("cluster peer still unreachable", "peer", peer, "failures", s.failures, "since", s.since.Format(time.RFC3339), "err", errText)
	}
}

// reachable records that peer answered again.
func (h *peerHealth) reachable(peer string) {
	if id := h.name(peer); id != "" {
		peer = id
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, down := h.peers[peer]; down {
		delete(h.peers, peer)
		h.log.Info("cluster peer reachable again", "peer", peer, "failures", s.failures, "down_for", time.Since(s.since).Round(time.Millisecond))
	}
}

// electionOver forgets the peers that failed only vote requests: the
// election is over, and this node contacts them no more until the next
// one, which logs them again if they still cannot be reached.
func (h *peerHealth) electionOver() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for p, s := range h.peers {
		if s.votes {
			delete(h.peers, p)
		}
	}
}

// down reports whether peer is not reached now.
func (h *peerHealth) down(peer string) bool {
	if id := h.name(peer); id != "" {
		peer = id
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.peers[peer]
	return ok
}

// unreachable returns the peers not reached now.
func (h *peerHealth) unreachable() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ps []string
	for p := range h.peers {
		ps = append(ps, p)
	}
	return ps
}

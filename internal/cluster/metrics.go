package cluster

import (
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Collectors returns the node's cluster figures for /metrics, read when
// scraped. A follower's lag is the leader's dss_cluster_commit_index less
// the follower's dss_cluster_applied_index; `dss cluster status` shows it
// for every member.
func (n *Node) Collectors() []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dss_cluster_" + name, Help: help}, f)
	}
	started := func() bool { return n.raft != nil }
	return append(n.brokerCollectors(),
		gauge("term", "The node's current Raft term.", func() float64 {
			if !started() {
				return 0
			}
			return float64(n.raft.CurrentTerm())
		}),
		gauge("last_index", "The index of the node's last Raft log entry.", func() float64 {
			if !started() {
				return 0
			}
			return float64(n.raft.LastIndex())
		}),
		gauge("commit_index", "The highest Raft log index the node knows to be committed.", func() float64 {
			if !started() {
				return 0
			}
			return float64(n.raft.CommitIndex())
		}),
		gauge("applied_index", "The index of the last Raft log entry the node's state machine applied.", func() float64 {
			if n.fsm == nil {
				return 0
			}
			return float64(n.fsm.applied.Load())
		}),
		gauge("leader", "1 while this node is the leader and takes writes, else 0.", func() float64 {
			if n.isReady() {
				return 1
			}
			return 0
		}),
		gauge("has_leader", "1 while this node knows a leader, else 0.", func() float64 {
			if n.HasLeader() {
				return 1
			}
			return 0
		}),
		gauge("members", "The voting members in the node's latest cluster configuration.", func() float64 {
			if !started() {
				return 0
			}
			f := n.raft.GetConfiguration()
			if f.Error() != nil {
				return 0
			}
			voters := 0
			for _, s := range f.Configuration().Servers {
				if s.Suffrage == raft.Voter {
					voters++
				}
			}
			return float64(voters)
		}),
		gauge("peers_unreachable", "The members this node could not reach at its last attempt (heartbeats as the leader, vote requests as a candidate).", func() float64 {
			if n.health == nil {
				return 0
			}
			return float64(len(n.health.unreachable()))
		}),
		gauge("inflight_requests", "Requests this node forwarded to the leader or confirms a read index for.", func() float64 {
			return float64(n.inflight.Load())
		}),
	)
}

// Package cluster replicates the state store across a Raft cluster of dss
// nodes (hashicorp/raft), as the engine's replicated log (ADR 0004, 0005).
//
// # Writes
//
// The leader's engine decides each write (time, version, expiry version)
// under its lock and hands it to Node.Propose, which adds it to the next
// batch; one proposer goroutine hands the batches to Raft in that order,
// so the log holds the writes in version order. Every node applies the
// committed batches on Raft's FSM goroutine (fsm.ApplyBatch →
// engine.ApplyCommitted) and delivers the changes to its own KEYNOTIFY
// watchers; the leader answers the requests then. A follower forwards its
// writes to the leader over one stream (forwarder, forwardSession), in the
// order they came, and answers each client itself once the leader has
// applied the write; the leader takes a stream's writes in that order,
// within one leadership, so one client's writes are applied in the order
// it sent them. A client's read, linearizable or stale, waits for the
// client's own writes still under way on its node: not yet answered, or
// not yet applied by its machine (writeOrder).
//
// A new leader takes writes only after its term-start entry is applied:
// then its clock is above every version in the log, and the time it
// decides is never behind the last applied command's.
//
// # Reads
//
// A GET is linearizable unless the request asks for a stale read: the
// node obtains a read index (on the leader: the commit index, confirmed
// by one heartbeat round to a majority, shared by every read that waits
// meanwhile; on a follower: the same, asked of the leader) and reads its
// machine once it has applied that index.
//
// # Retries
//
// The replicated state remembers each write's result by client id,
// correlation data and a digest of the request for a window of command
// time (dedupe): a request that a client sends again after a failover is
// answered with the first result, not applied twice, while another
// request with the same correlation data is applied.
//
// # One broker across the nodes
//
// The broker's cluster-wide metadata (package pubsub: routes per node,
// retained messages, client ids) is a state of its own, applied by the
// FSM from entries of kind entryPubSub and written into every snapshot.
// Each node proposes its changes through one proposer (metaSync), which
// batches them, sends them to the leader, and keeps what did not commit
// for the next batch; routes are compared with the local subscriptions
// rather than queued, so they converge after a partition or a restart.
// MQTT messages travel between nodes on streams of their own (relay,
// connection kind connRelay): one per peer, batched, acknowledged, kept
// for a peer that cannot be reached (docs/adr/0009).
//
// # The cluster listener
//
// One TCP listener carries Raft's RPCs, the streams of forwarded writes
// and of MQTT messages, and this package's own RPCs (net/rpc): read
// indexes, membership, status, the broker's proposals and the handover
// of sessions. With a cluster
// secret, every connection is TLS 1.3 with a key derived from the secret,
// and a peer that cannot prove it holds the secret is refused; without
// one, the listener must be on a loopback address.
//
// # Lock order
//
// The engine lock (see package engine) is taken before Node.mu (Propose
// runs under it), and Node.mu before writeOrder.mu; Node.mu, fsm.mu,
// reader.mu and forwarder.mu are never held together and never held while
// calling the engine or Raft. metaSync.mu, relay.mu, a link's mu and a
// receiver's mu are leaves, but for a receiver's mu, held while the
// broker delivers a message from the peer (Broker.Deliver takes the broker
// core's locks). pubsub.State's lock is held by nobody while it calls its
// observer.
package cluster

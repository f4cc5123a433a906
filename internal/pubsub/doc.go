// Package pubsub is the cluster-wide metadata of dss's MQTT broker: the
// route table (which node has subscribers for which filter), retained
// messages, and the owners of client ids with their persistent sessions
// (docs/adr/0009-one-broker-across-the-cluster.md).
//
// State is a deterministic machine: every node of a cluster applies the
// same commands (Raft log entries of kind entryPubSub, package cluster) in
// the same order and reaches the same state. Everything that could differ
// between nodes (times, stamps, which process of a node) travels inside
// the commands. It knows nothing of MQTT packets or of the broker core:
// filters, topics and client ids are strings, and retained messages and a
// session's subscriptions are bytes that the broker binding encodes and
// reads; the state only keeps them.
//
// Conflicts resolve by stamps (hybrid logical clock readings of the node
// that made the change), not by log order: a retained message or a
// client id changed on both sides of a partition converges to the newer
// change on every node, whichever side's entry reaches the log first.
//
// # Concurrency
//
// Apply and Restore run on one goroutine (the cluster's FSM goroutine).
// The lookups (Match, Route, Session, Retained...) may run on any
// goroutine at any time; they take the state's read lock. Observer calls
// are made on the applying goroutine, after the state's lock is released.
package pubsub

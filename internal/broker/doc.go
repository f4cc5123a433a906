// Package broker runs dss's MQTT 5 broker core (package mqtt) and binds the
// state store to it. It is the only package of the product that imports
// the core (tests use its packet encoding too); what it calls there is the
// list coreEdge (edge_test.go, ADR 0005).
//
// The binding (binding.go) is the core's Access, PublishConsumer and
// session, subscription and retain events. Requests published to the
// state store's system topic never reach the broker's routing: the
// binding checks the
// transport rules (QoS 1, Response Topic, Correlation Data, allowed
// response topics), answers the PUBACK itself, reads the RPC envelope,
// decodes the RESP3 payload and submits the request to the engine (the
// envelope, the payload and the response's bytes are package service's,
// which dss attach shares). When
// the engine delivers the result, the response is published through the
// broker's routing to whoever subscribed to the Response Topic.
//
// KEYNOTIFY registrations belong to a connection: they live here, on the
// node the client is connected to, and end with the connection.
//
// In a cluster the broker spans the nodes (spanning, cluster_*.go,
// docs/adr/0009): it is the core's mqtt.Remote (which filters have local
// subscribers, where each message goes, when a publisher's acknowledgement
// may go) and the cluster's Broker (messages from the other nodes, the
// replicated retained messages to mirror into the core, sessions to hand
// over), and its session events claim client ids and keep persistent sessions'
// subscriptions in the replicated state.
//
// # Lock order
//
// A lock may be taken while holding the locks above it, never the other
// way round:
//
//  1. Broker.drainMu, held shared from a request's draining check until
//     Submit returns (and so around a response that is ready at once).
//  2. The store's locks (the engine lock, see package engine), taken
//     inside Submit.
//  3. registry.mu, taken by the engine under its lock (KeyNotify,
//     Changed) and on its own when a connection ends; nothing is called
//     while it is held.
//  4. The broker core's locks (client and topic tables and routes, a
//     connection's write lock), taken when a response or notification is
//     published: inside Submit for a result ready at once, otherwise on
//     the engine's delivery goroutine without the engine lock.
//  5. spanning.mu and spanning.chainsMu, leaves: taken under the core's
//     session lock (TakeSession's check) and never held while calling the
//     core or the cluster.
//
// A response is never published under the engine lock or registry.mu: the
// engine calls Done and the notification deliveries without its lock.
//
// The core calls the binding holding locks of its own (a read loop's turn of
// the connection, the session lock during a takeover), which therefore
// come before all of these (see package mqtt's lock order).
package broker

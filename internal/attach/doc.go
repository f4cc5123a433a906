// Package attach serves the state store to the clients of another MQTT 5
// broker (Mosquitto, EMQX, HiveMQ, ...), as one of its clients: dss
// attach. It imports nothing of dss's own broker core; the request
// handling it shares with dss serve is package service's, so both answer
// with the same bytes and properties.
//
// # Requests
//
// The attacher subscribes to the request topic with a shared
// subscription ($share/<group>/statestore/v1/.../command/invoke), so that
// several instances attached to one broker share the requests. paho
// delivers the messages one at a time, in order, on one goroutine, which
// checks each request, submits it to the store and acknowledges it when
// the handler returns. The response is published QoS 1 to the request's
// response topic once the store delivers the result (after the journal
// or the cluster made it durable), through autopaho's queue: while dss is
// not connected, responses and notifications wait there, in order, and go
// out after the reconnection.
//
// # Who asked
//
// The broker does not tell a subscriber who published a message. The
// requester's client id is taken from __srcId (the vendor's clients and
// dss's send it) or else from the response topic's usual forms; it names
// the notification topic of KEYNOTIFY and tells retried requests apart.
// It is a claim, not a proof: the broker's ACLs keep one client from
// reading another's topics (docs/attach.md, deploy/mosquitto/).
//
// # Requests that arrive twice
//
// recent remembers the requests of the last RetryWindow by requester,
// correlation data and content: one that comes again while the first is
// carried out, or that the broker redelivers (DUP) after it was
// answered, is not carried out or answered again; a client's own retry
// of a write gets the first response again.
//
// # Presence
//
// KEYNOTIFY registrations, of keys and of patterns, are kept by client id
// (registry). They end with STOP, when the broker says the client left or
// connected anew (Mosquitto's log on $SYS/broker/log/N and /I, EMQX's
// client events), and at the end of a lease that the same KEYNOTIFY
// renews.
//
// # What the broker takes
//
// A message larger than the Maximum Packet Size of the broker's CONNACK
// is dropped before it enters autopaho's queue (the broker would end the
// connection, and the session would send it again on every new one), and
// SCAN's pages are cut to fit it.
//
// # Lock order
//
// Attacher.drainMu (shared, around a request's submission) before the
// store's locks (the engine lock); registry.mu and recent.mu are taken
// under the engine lock or alone, never one inside the other, and nothing
// is called while they are held. Attacher.mu is taken alone.
package attach

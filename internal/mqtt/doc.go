// Package mqtt is dss's MQTT broker core: an MQTT 5 broker (with MQTT
// 3.1.1 clients accepted) that knows nothing of the state store. It owns
// the protocol, connections and their read and write loops, sessions,
// inflight messages, subscriptions and routing, retained messages and
// wills; internal/broker binds the state store to it through the few
// interfaces of hooks.go, set in Options, and the calls its TestCoreEdge
// lists.
//
// The core grew from github.com/mochi-mqtt/server/v2 v2.7.9 (MIT, see
// LICENSE.md) and is maintained as dss code (docs/adr/0005-own-mqtt-core.md).
// Changes of behaviour are marked with a comment starting "dss:" and listed
// in FORK.md with the test that covers each.
//
// # Lock order
//
// A lock may be taken while holding the locks above it, never the other
// way round. Locks not listed (the topic aliases', the routes' of
// routes.go, a connection's write queue's) are leaves: nothing is taken
// while they are held.
//
//  1. Server.sessionMu: a connection taking a session over and
//     registering, the cleanup of a connection that ends, the expiry of a
//     session. Options.MayTakeOver, Access.Allow (of inherited
//     subscriptions), SubscriptionEvents.Unsubscribed and
//     SessionEvents.SessionExpired run under it.
//  2. Server.attachMu: held by a connection that registers (under
//     sessionMu), and by Close while it marks the server closing and stops
//     the connections still sending their CONNECT, so that no connection
//     registers unseen by Close.
//  3. A listener's lock (Listeners, the TCP listener's), held while the
//     listener closes and Server.closeListenerClients disconnects its
//     clients.
//  4. A read loop's lock, then a connection's (package readloop: the
//     Loop's, then the Member's). A read loop's turn holds only the
//     Member lock of the connection it serves, for the
//     whole turn: the interfaces called for a packet read there
//     (PublishConsumer, and so the state store's request handling) run
//     under it and must not wait for a connection.
//  5. The tables, each chain taken alone: Clients (the client table); the
//     TopicsIndex's root, then a particle's lock, then its subscription
//     and retained maps; a Client's handover lock (read by a delivery,
//     written by the takeover of its session), then its own lock
//     (NextPacketID), then its Inflight's. No interface of hooks.go is
//     called under them.
//  6. A connection's write token (outboundQueue.writing, a flag, not a
//     mutex: whoever writes the queue's bytes or past them holds it), then
//     ClientConnection.writeMu for the write itself. WriteNow only tries
//     writeMu (TryLock) where it must not wait.
//
// The binding's locks (see package broker) come after 1 and 4, under which
// the core calls the binding, and before 5 and 6, which it takes when it
// publishes.
package mqtt

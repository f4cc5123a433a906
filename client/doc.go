// Package client is the Go client of dss, the MQTT 5 broker with a built-in
// key-value state store. It speaks the state store protocol (RESP3 requests
// over MQTT 5 request/response), so it works against dss and against any
// server of that protocol.
//
// # Basics
//
// Dial connects to the first reachable server of a list and stays
// connected until Close, reconnecting in the background:
//
//	c, err := client.Dial(ctx, client.Config{Servers: []string{"node1:1883", "node2:1883"}})
//	if err != nil { ... }
//	defer c.Close()
//
// Keys are strings and values byte slices; both may hold any bytes. Every
// stored value has a version, an hlc.Timestamp, which orders like time:
//
//	res, err := c.Set(ctx, "greeting", []byte("hello"), client.TTL(time.Minute))
//	e, found, err := c.Get(ctx, "greeting") // e.Value, e.Version
//	d, err := c.Del(ctx, "greeting")        // d.Deleted
//
// Set takes a Condition (IfMissing is NX, IfMissingOrEqual is NEX); a
// condition that is not met is not an error but SetResult.Applied false.
// VDel deletes a key only if it holds a given value; together with
// IfMissing they make compare-and-swap loops.
//
// Watch streams the changes of keys:
//
//	w, err := c.Watch(ctx, []string{"setpoint"}, client.InitialState)
//	defer w.Stop(ctx)
//	for e := range w.Events() { ... } // e.Op is OpSet or OpDelete
//
// Lock takes a leased lock, renews it in the background, and gives the
// fencing token that protects other keys from a holder whose lease ran out:
//
//	l, err := c.Lock(ctx, "jobs/compactor", client.TTL(10*time.Second))
//	defer l.Release(ctx)
//	_, err = c.Set(ctx, "jobs/state", v, client.FencingToken(l.Token()))
//
// Every call that waits takes a context first and gives up when it ends.
// Errors the server answers with are *ServerError values; each text of the
// protocol has a sentinel (ErrFencingTokenLowerVersion, ErrQuotaExceeded,
// ...) to test with errors.Is.
//
// # Caveats
//
//   - Requests that change the store are sent once. If the connection drops
//     after the request left and before its response arrived, the call
//     returns ErrConnectionLost: the change may or may not have been made.
//     Read the key to find out. Reads and registrations are retried on the
//     next connection; requests the server refused without executing them
//     (it was shutting down) are retried too.
//   - Watches survive reconnects, but a notification sent while the client
//     was not connected is lost with the connection. Instead, after every
//     reconnect each watched key's current state is reported as an Event
//     with Resync set. So a watch reports every change while connected, and
//     where the changes led while not; it never misses the latest state.
//   - Events of a watch are queued for its reader; a reader that falls
//     further behind than MaxPending ends the watch with ErrWatchOverflow.
//   - A lease is only as good as the clocks and the TTL: a holder that
//     stalls longer than the TTL loses the lock without knowing at once.
//     That is what the fencing token is for: write protected keys with
//     FencingToken(lease.Token()) and the server refuses the stale holder's
//     writes once a newer holder has written.
//   - Versions come from the server's hybrid logical clock. The client's
//     clock (for __ts) must be within a minute of the server's, or requests
//     fail with ErrTimestampSkew.
//   - Connections are plain TCP; TLS is not supported yet.
package client

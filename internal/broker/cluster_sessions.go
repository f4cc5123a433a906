package broker

import (
	"context"
	"time"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/pubsub"
)

// A CONNECT that resumes a session held by another node waits at most
// sp.wait for its claim of the client id to commit, and fetchWait for the
// session; a SUBACK waits at most sp.wait for the routes it added to be
// in effect on the other nodes.

// fetchWait bounds how long a CONNECT waits for the node that held its
// session to hand it over.
func (sp *spanning) fetchWait() time.Duration { return sp.wait / 2 }

// sessionLife returns whether cl's session outlives its connection, and
// for how many seconds.
func (sp *spanning) sessionLife(cl *mqtt.Client) (bool, uint32) {
	if cl.Properties.ProtocolVersion == 5 {
		e := cl.Properties.Props.SessionExpiryInterval
		return e > 0, e
	}
	if cl.Properties.Clean {
		return false, 0
	}
	return true, uint32(min(sp.b.srv.Options.Capabilities.MaximumSessionExpiryInterval, 1<<32-1))
}

// connect claims cl's client id for this node, before the core's own
// takeover of a local session. A connection that resumes a session held
// by another node (Clean Start 0) waits for its claim and fetches the
// session, which the core then takes over as a local one; if that node
// does not answer, the subscriptions the cluster kept of a persistent
// session are installed instead. A connection whose session outlives it
// waits for its claim too, so that its next connection finds the session
// through any node. Any other connection claims the id without waiting:
// the node that held it ends its connection when it applies the claim.
func (sp *spanning) connect(cl *mqtt.Client, pk *packets.Packet) {
	if cl.Net.Inline {
		return
	}
	id := cl.ID
	clean := pk.Connect.Clean
	persistent, expiry := sp.sessionLife(cl)
	stamp := sp.c.Stamp()
	owner := ownerOf(cl)
	claim := pubsub.Claim{Client: id, Node: sp.self, Epoch: sp.c.Epoch(), Stamp: stamp, Owner: owner, Clean: clean, Persistent: persistent, Expiry: expiry}
	cur, had := sp.ps.Session(id)
	sp.mu.Lock()
	sp.conns[id] = &localConn{cl: cl, stamp: stamp, owner: owner}
	sp.mu.Unlock()
	elsewhere := had && (cur.Node != sp.self || cur.Epoch != sp.c.Epoch())
	if clean || !elsewhere {
		if persistent {
			// A session that outlives its connection is known to every
			// reachable node before its CONNACK: the client's next
			// connection, through any node, resumes it.
			sp.awaitClaim(claim, "the claim of a client id was not committed in time; a connection through another node soon may not find the session")
		} else {
			sp.c.Claim(claim, nil)
		}
		return
	}
	sp.awaitClaim(claim, "the claim of a client id was not committed in time; the session is resumed with what the cluster knows")
	var subs []packets.Subscription
	var inflight []packets.Packet
	present := false
	if cur.Node != sp.self {
		ctx, cancel := context.WithTimeout(context.Background(), sp.fetchWait())
		data, ok, err := sp.c.FetchSession(ctx, cur.Node, id, owner, stamp, false)
		cancel()
		switch {
		case err != nil:
			sp.b.log.Info("the node that held a session does not answer; its subscriptions are resumed from the cluster's copy", "client", id, "node", cur.Node, "err", err)
		case ok:
			if subs, inflight, err = parseSession(data); err != nil {
				sp.b.log.Warn("session from another node not read", "client", id, "node", cur.Node, "err", err)
				subs, inflight = nil, nil
			} else {
				present = true
			}
		}
	}
	if !present && cur.Persistent {
		s, err := parseSubscriptions(cur.Subscriptions)
		if len(cur.Subscriptions) > 0 && err != nil {
			sp.b.log.Warn("subscriptions of a session not read", "client", id, "err", err)
		}
		subs, present = s, true
	}
	if present && sp.b.srv.InstallSession(id, cl.Properties.ProtocolVersion, expiry, cl.Auth, subs, inflight) && len(subs) > 0 {
		// Its routes are in effect cluster-wide before its CONNACK, as a
		// SUBSCRIBE's are before its SUBACK.
		sp.syncRoutes(id)
	}
}

// awaitClaim proposes claim and waits, at most sp.wait, until every
// reachable node applied it; without a leader it only proposes it.
func (sp *spanning) awaitClaim(claim pubsub.Claim, late string) {
	if !sp.c.HasLeader() {
		sp.c.Claim(claim, nil)
		return
	}
	committed := make(chan error, 1)
	sp.c.Claim(claim, func(err error) { committed <- err })
	select {
	case <-committed:
	case <-time.After(sp.wait):
		sp.b.log.Warn(late, "client", claim.Client)
	}
}

// established keeps the subscriptions a persistent session resumed in the
// replicated state, under the new connection's claim.
func (sp *spanning) established(cl *mqtt.Client) {
	if !cl.Net.Inline {
		sp.replicateSubscriptions(cl, nil)
	}
}

// subscribed waits, before the SUBACK, until the routes the subscription
// added are in effect on every reachable node and a persistent session's
// subscriptions are in every reachable node's replicated state (unless
// no majority can be reached): a client that reconnects through another
// node, even after this one died, finds what its SUBACK granted.
func (sp *spanning) subscribed(cl *mqtt.Client, reasonCodes []byte) {
	if cl.Net.Inline {
		return
	}
	granted := false
	for _, c := range reasonCodes {
		granted = granted || c <= packets.CodeGrantedQos2.Code
	}
	var stored chan error
	if sp.c.HasLeader() {
		stored = make(chan error, 1)
	}
	if !sp.replicateSubscriptions(cl, stored) {
		stored = nil
	}
	if granted {
		sp.syncRoutes(cl.ID)
	}
	if stored != nil {
		select {
		case <-stored:
		case <-time.After(sp.wait):
			sp.b.log.Debug("a persistent session's subscriptions not confirmed by every node in time", "client", cl.ID)
		}
	}
}

// syncRoutes waits until the routes of this node are in effect on every
// reachable node, unless no majority can be reached.
func (sp *spanning) syncRoutes(client string) {
	if !sp.c.HasLeader() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sp.wait)
	defer cancel()
	if err := sp.c.SyncRoutes(ctx); err != nil {
		sp.b.log.Debug("routes not confirmed by every node in time", "client", client, "err", err)
	}
}

// replicateSubscriptions proposes the subscriptions of cl's session, if
// it is persistent and held here, and reports whether it did; done, if
// not nil, is sent the outcome once every reachable node applied them.
func (sp *spanning) replicateSubscriptions(cl *mqtt.Client, done chan<- error) bool {
	if persistent, _ := sp.sessionLife(cl); !persistent {
		return false
	}
	sp.mu.Lock()
	lc := sp.conns[cl.ID]
	sp.mu.Unlock()
	if lc == nil || lc.cl != cl {
		return false
	}
	all := cl.State.Subscriptions.GetAll()
	subs := make([]packets.Subscription, 0, len(all))
	for _, s := range all {
		subs = append(subs, s)
	}
	var f func(error)
	if done != nil {
		f = func(err error) { done <- err }
	}
	sp.c.SessionSubscriptions(cl.ID, lc.stamp, appendSubscriptions(nil, subs), f)
	return true
}

// disconnected releases cl's claim when its connection ends: the
// replicated state keeps a persistent session for its expiry.
func (sp *spanning) disconnected(cl *mqtt.Client, expire bool) {
	if cl.Net.Inline {
		return
	}
	sp.mu.Lock()
	lc := sp.conns[cl.ID]
	if lc == nil || lc.cl != cl {
		sp.mu.Unlock()
		return
	}
	if expire || cl.IsTakenOver() {
		delete(sp.conns, cl.ID)
	}
	sp.mu.Unlock()
	if cl.IsTakenOver() {
		return // another connection took the id, here or elsewhere: its claim stands
	}
	_, expiry := sp.sessionLife(cl)
	sp.c.Release(cl.ID, lc.stamp, !expire, expiry)
}

// expired forgets a session the core expired.
func (sp *spanning) expired(cl *mqtt.Client) {
	sp.mu.Lock()
	if lc := sp.conns[cl.ID]; lc != nil && lc.cl == cl {
		delete(sp.conns, cl.ID)
	}
	sp.mu.Unlock()
}

// Claimed ends this node's connection of a client id that a newer
// connection took, on another node: with DISCONNECT 0x8E, and the session
// removed when the new connection starts afresh. A session the new
// connection resumes stays here until that node fetches it.
func (sp *spanning) Claimed(client string, s pubsub.Session) {
	if s.Node == sp.self && s.Epoch == sp.c.Epoch() {
		return
	}
	sp.mu.Lock()
	lc := sp.conns[client]
	sp.mu.Unlock()
	if lc == nil || !lc.stamp.Before(s.Stamp) || lc.owner != s.Owner {
		return
	}
	// A new connection to the session: a will waiting for its delay is
	// not sent [MQTT-3.1.3-9].
	sp.b.srv.CancelWill(client)
	// Not on the FSM goroutine: ending a connection writes to it.
	go func() {
		if s.Clean {
			sp.b.srv.TakeSession(client, func(cl *mqtt.Client) bool { return cl == lc.cl }, nil)
			sp.forget(client, lc)
			return
		}
		if persistent, _ := sp.sessionLife(lc.cl); persistent {
			if !lc.cl.Closed() {
				_ = sp.b.srv.DisconnectClient(lc.cl, packets.ErrSessionTakenOver)
			}
		} else {
			// A session that ends with its connection would be gone
			// before the new node fetches it: the fetch ends the
			// connection (TakeSession); if none comes, it ends here.
			time.AfterFunc(2*sp.fetchWait(), func() {
				if !lc.cl.Closed() {
					_ = sp.b.srv.DisconnectClient(lc.cl, packets.ErrSessionTakenOver)
				}
			})
		}
		// The new node fetches the session (TakeSession) if it knew of
		// it when it connected; if it did not, the session has no owner
		// left here once that time has passed.
		time.AfterFunc(sp.sessionGrace(), func() {
			if sp.b.srv.TakeSession(client, func(cl *mqtt.Client) bool { return cl == lc.cl }, nil) {
				sp.forget(client, lc)
			}
		})
	}()
}

// sessionGrace is how long a session that a connection on another node
// took over stays here for that node to fetch it: that node waits for its
// claim, then fetches.
func (sp *spanning) sessionGrace() time.Duration { return max(10*time.Second, 2*sp.wait) }

func (sp *spanning) forget(client string, lc *localConn) {
	sp.mu.Lock()
	if sp.conns[client] == lc {
		delete(sp.conns, client)
	}
	sp.mu.Unlock()
}

// TakeSession hands this node's session of client to the node whose
// connection, stamped stamp and authenticated as owner, took the id; a
// session of another owner stays.
func (sp *spanning) TakeSession(client, owner string, stamp hlc.Timestamp, clean bool) ([]byte, bool) {
	var out []byte
	var taken *localConn
	ok := sp.b.srv.TakeSession(client, func(cl *mqtt.Client) bool {
		sp.mu.Lock()
		lc := sp.conns[client]
		sp.mu.Unlock()
		if lc != nil && lc.cl == cl && !lc.stamp.Before(stamp) {
			return false // a newer connection holds it here
		}
		if ownerOf(cl) != owner {
			return false
		}
		taken = lc
		return true
	}, func(subs []packets.Subscription, inflight []packets.Packet) {
		if !clean {
			out = appendSession(nil, subs, inflight)
		}
	})
	if ok && taken != nil {
		sp.forget(client, taken)
	}
	return out, ok
}

// mayConnect refuses a connection whose client id another principal holds
// in the cluster (connected, or with a persistent session), as a single
// node refuses its takeover: CONNACK 0x85.
func (sp *spanning) mayConnect(cl *mqtt.Client) error {
	cur, had := sp.ps.Session(cl.ID)
	if had && (cur.Connected || cur.Persistent) && cur.Owner != ownerOf(cl) {
		sp.b.log.Warn("session takeover refused: another principal holds the client id in the cluster", "client", cl.ID, "node", cur.Node, "remote", cl.Net.Remote)
		return packets.ErrClientIdentifierNotValid
	}
	return nil
}

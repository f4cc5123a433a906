package broker

import (
	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/wire"
)

// codeAccessRevoked ends the connections that what was reloaded no
// longer admits. DISCONNECT may carry 0x87 (MQTT 5, 3.14.2.1).
var codeAccessRevoked = packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "not authorized: the server's users or policy changed"}

// Reauthorize puts the users file and policy in force for every
// connection, after they were read again or a console session ended. A
// connection keeps going unless what it holds is no longer granted: its
// user is gone or its password changed, the console session it logged in
// with ended, it may no longer connect, a subscription of it or a
// key it watches is no longer granted. Those are disconnected with 0x87
// (and learn the new limits when they connect again), where the vendor's
// broker disconnects every client.
//
// A session without a connection gets the new grants too: its Will, if
// it waits for its delay, is checked against them when it is sent; and
// if its user is gone or has a new password, it is sent no longer.
func (b *Broker) Reauthorize() {
	if b.cfg.Auth == nil {
		return
	}
	for _, cl := range b.srv.Clients.GetAll() {
		a := accessOf(cl)
		if a == nil {
			continue
		}
		a.grants.Store(b.cfg.Auth.Grants(&a.principal))
		if !b.cfg.Auth.StillValid(&a.principal, a.hash) {
			a.revoked.Store(true)
		}
		if cl.Closed() {
			continue
		}
		if why := b.revoked(cl, a); why != "" {
			b.log.Info("client disconnected: its access was revoked", "client", cl.ID, "principal", a.identity, "why", why)
			b.metrics.LoginsRefused.WithLabelValues(codeAccessRevoked.Reason).Inc()
			_ = b.srv.DisconnectClient(cl, codeAccessRevoked)
		}
	}
	// Own response routes were checked against the old grants.
	b.own.grants.Add(1)
}

// revoked says what of cl's present state a is no longer granted, or "".
func (b *Broker) revoked(cl *mqtt.Client, a *access) string {
	if !b.cfg.Auth.StillValid(&a.principal, a.hash) {
		return "the user was removed or its password changed"
	}
	if a.session != "" && !b.cfg.Auth.SessionValid(a.principal.Username, []byte(a.session)) {
		return "its console session ended"
	}
	g := a.grants.Load()
	if g != nil && !g.Connect() {
		return "Connect is no longer granted"
	}
	for filter := range cl.State.Subscriptions.GetAll() {
		if !a.mayRead(filter) {
			return "the subscription " + filter + " is no longer granted"
		}
	}
	for _, key := range b.watches.keysOf(cl) {
		if !a.mayRequest(&wire.Request{Verb: wire.VerbKeyNotify, Key: []byte(key)}) {
			return "a watched key is no longer readable"
		}
	}
	return ""
}

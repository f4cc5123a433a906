package broker

import (
	"github.com/dssio/dss/internal/mqtt/packets"
)

// codeAccessRevoked ends the connections that what was reloaded no
// longer admits. DISCONNECT may carry 0x87 (MQTT 5, 3.14.2.1).
var codeAccessRevoked = packets.Code{Code: packets.ErrNotAuthorized.Code, Reason: "not authorized: the server's users or policy changed"}

// Reauthorize checks every connection against the users file in force,
// after it was read again: a connection whose user is gone or whose
// password changed is disconnected with 0x87; the others keep going.
func (b *Broker) Reauthorize() {
	if b.cfg.Auth == nil {
		return
	}
	for _, cl := range b.srv.Clients.GetAll() {
		a := accessOf(cl)
		if a == nil || cl.Closed() || b.cfg.Auth.StillValid(&a.principal, a.hash) {
			continue
		}
		b.log.Info("client disconnected: its access was revoked", "client", cl.ID, "principal", a.identity)
		b.metrics.LoginsRefused.WithLabelValues(codeAccessRevoked.Reason).Inc()
		_ = b.srv.DisconnectClient(cl, codeAccessRevoked)
	}
}

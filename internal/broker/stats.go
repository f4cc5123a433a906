package broker

import "sync/atomic"

// Clients returns the number of connected MQTT clients.
func (b *Broker) Clients() int64 {
	return max(atomic.LoadInt64(&b.srv.Info.ClientsConnected), 0)
}

// Messages returns the PUBLISH packets the clients sent the broker and
// the broker sent them, since it started.
func (b *Broker) Messages() (received, sent int64) {
	return atomic.LoadInt64(&b.srv.Info.MessagesReceived), atomic.LoadInt64(&b.srv.Info.MessagesSent)
}

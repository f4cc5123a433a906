package broker

import "sync/atomic"

// Clients returns the number of connected MQTT clients.
func (b *Broker) Clients() int64 {
	return max(atomic.LoadInt64(&b.srv.Info.ClientsConnected), 0)
}

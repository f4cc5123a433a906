package mqtt

// Info holds the core's counters, which dss's metrics read (internal/broker,
// /metrics). Each is read and changed atomically.
//
// dss: upstream's Info, without the fields only its $SYS topics
// published.
type Info struct {
	BytesReceived    int64 // bytes received since the server started
	BytesSent        int64 // bytes sent since the server started
	ClientsConnected int64 // clients connected now
	MessagesReceived int64 // PUBLISH packets received
	MessagesSent     int64 // PUBLISH packets sent
	MessagesDropped  int64 // QoS 0 messages dropped for a client whose queue of writes was full
	Inflight         int64 // QoS 1 and 2 messages sent and not yet acknowledged
	InflightDropped  int64 // QoS 1 and 2 messages dropped for a client without a free packet id
	Subscriptions    int64 // topic filters held by sessions
}

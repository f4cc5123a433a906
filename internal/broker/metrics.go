package broker

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/service"
)

// Metrics counts what the binding does. Register it with a Prometheus
// registry to export it.
type Metrics struct {
	service.RequestMetrics
	Disconnects prometheus.Counter // clients disconnected for a forbidden response topic
	// LoginsRefused counts connections refused by authentication or
	// authorization, by reason.
	LoginsRefused *prometheus.CounterVec

	// RefusedPackets and Panics read the broker core's Faults, once a
	// broker is bound to these metrics.
	RefusedPackets prometheus.CounterFunc
	Panics         prometheus.CounterFunc
	// RefusedTopics counts topics and filters refused for their levels
	// or length; StalledPackets connections closed for a packet that
	// stopped arriving.
	RefusedTopics  prometheus.CounterFunc
	StalledPackets prometheus.CounterFunc
	// RefusedRetained counts messages to retain refused at the bounds of
	// retained messages; Retained and RetainedBytes read their number
	// and memory.
	RefusedRetained prometheus.CounterFunc
	Retained        prometheus.GaugeFunc
	RetainedBytes   prometheus.GaugeFunc
	topics          atomic.Pointer[mqtt.TopicsIndex]
	faults          atomic.Pointer[mqtt.Faults]
	// QueuedBytes, QueueDropsSession and QueueDropsTotal read the broker
	// core's Queues: the memory of the messages queued for sessions
	// without a connection, and the messages dropped to bound it.
	QueuedBytes       prometheus.GaugeFunc
	HeldBytes         prometheus.GaugeFunc
	QueueDropsSession prometheus.CounterFunc
	QueueDropsTotal   prometheus.CounterFunc
	queues            atomic.Pointer[mqtt.Queues]
	// DropsUnacknowledged and DropsPendingWrites read the broker core's
	// Info: messages for connected clients dropped because the client
	// left its maximum of QoS 1 and 2 messages unacknowledged, or read
	// too slowly for its queue of pending writes.
	DropsUnacknowledged prometheus.CounterFunc
	DropsPendingWrites  prometheus.CounterFunc
	info                atomic.Pointer[mqtt.Info]
	// AcceptErrors reads the bound broker's listeners.
	AcceptErrors prometheus.CounterFunc
	listener     atomic.Pointer[listeners.TCP]
	tlsListener  atomic.Pointer[listeners.TCP] // nil without a TLS listener

	traffic     trafficMetrics
	wsListeners atomic.Pointer[[]*listeners.WebSocket]
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		LoginsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_logins_refused_total", Help: "Connections refused by authentication or authorization, by reason.",
		}, []string{"reason"}),
		RequestMetrics: service.NewRequestMetrics(),
		Disconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_forbidden_response_topic_disconnects_total", Help: "Clients disconnected for naming a forbidden response topic.",
		}),
	}
	m.RefusedPackets = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_packets_refused_total", Help: "MQTT packets refused as malformed, protocol errors or too large; the connection that sent one is closed.",
	}, m.fault(func(f *mqtt.Faults) int64 { return f.RefusedPackets.Load() }))
	m.Panics = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_connection_panics_total", Help: "Panics while serving a connection, each contained to that connection, which is closed.",
	}, m.fault(func(f *mqtt.Faults) int64 { return f.Panics.Load() }))
	m.RefusedTopics = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_topics_refused_total", Help: "Topic names and filters refused for their levels (--max-topic-levels) or length (--max-topic-length), in a PUBLISH, SUBSCRIBE, UNSUBSCRIBE or Will.",
	}, m.fault(func(f *mqtt.Faults) int64 { return f.RefusedTopics.Load() }))
	m.StalledPackets = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_packets_stalled_total", Help: "Connections closed because a packet stopped arriving for --packet-read-timeout (or, with a keep alive, until its deadline).",
	}, m.fault(func(f *mqtt.Faults) int64 { return f.StalledPackets.Load() }))
	m.RefusedRetained = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_retained_refused_total", Help: "Messages to retain refused at --max-retained-messages or --max-retained-bytes (PUBACK 0x97; a QoS 0 one dropped).",
	}, m.fault(func(f *mqtt.Faults) int64 { return f.RefusedRetained.Load() }))
	m.Retained = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dss_mqtt_retained_messages", Help: "Retained messages, bounded by --max-retained-messages.",
	}, m.retained(func(x *mqtt.TopicsIndex) int64 { return int64(x.RetainedCount()) }))
	m.RetainedBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dss_mqtt_retained_bytes", Help: "Memory of the retained messages (payload, topic, properties and about 1 KB each), bounded by --max-retained-bytes.",
	}, m.retained(func(x *mqtt.TopicsIndex) int64 { return x.RetainedBytes() }))
	m.QueuedBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dss_mqtt_queued_bytes", Help: "Memory of the messages queued for sessions without a connection (payload, topic, properties), bounded by --max-queued-bytes.",
	}, m.queued(func(q *mqtt.Queues) int64 { return q.Bytes() }))
	m.HeldBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dss_mqtt_held_bytes", Help: "Memory of the QoS 1 and 2 messages held for connected clients that cannot take them yet (past their receive maximum); it counts with dss_mqtt_queued_bytes against --max-queued-bytes.",
	}, m.queued(func(q *mqtt.Queues) int64 { return q.Held() }))
	const dropsHelp = "Messages queued for a session without a connection, or held for a connected client past its receive window, that were dropped, oldest first, for the bound of the session (--max-queued-bytes-per-session, and its 65,535 packet ids) or of all sessions (--max-queued-bytes)."
	m.QueueDropsSession = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_queued_messages_dropped_total", Help: dropsHelp, ConstLabels: prometheus.Labels{"limit": "session"},
	}, m.queued(func(q *mqtt.Queues) int64 { return q.DroppedSession.Load() }))
	m.QueueDropsTotal = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_queued_messages_dropped_total", Help: dropsHelp, ConstLabels: prometheus.Labels{"limit": "total"},
	}, m.queued(func(q *mqtt.Queues) int64 { return q.DroppedTotal.Load() }))
	const droppedHelp = "Messages for a connected client that were dropped: every packet id of the client was held by messages it had not acknowledged (reason=\"unacknowledged\"), or a QoS 0 message found its queue of pending writes full (reason=\"pending_writes\")."
	m.DropsUnacknowledged = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_messages_dropped_total", Help: droppedHelp, ConstLabels: prometheus.Labels{"reason": "unacknowledged"},
	}, m.infoCount(func(i *mqtt.Info) *int64 { return &i.InflightDropped }))
	m.DropsPendingWrites = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_messages_dropped_total", Help: droppedHelp, ConstLabels: prometheus.Labels{"reason": "pending_writes"},
	}, m.infoCount(func(i *mqtt.Info) *int64 { return &i.MessagesDropped }))
	m.AcceptErrors = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dss_mqtt_accept_errors_total", Help: "Errors accepting MQTT connections, on the plain, the TLS and the WebSocket listeners (each retried, after a wait of 5 ms doubling up to 1 s).",
	}, func() float64 {
		var n int64
		for _, l := range []*listeners.TCP{m.listener.Load(), m.tlsListener.Load()} {
			if l != nil {
				n += l.AcceptErrors()
			}
		}
		if ws := m.wsListeners.Load(); ws != nil {
			for _, l := range *ws {
				n += l.AcceptErrors()
			}
		}
		return float64(n)
	})
	m.traffic = newTrafficMetrics(&m.info)
	return m
}

// fault returns a reading of the bound broker core's faults.
func (m *Metrics) fault(read func(*mqtt.Faults) int64) func() float64 {
	return func() float64 {
		if f := m.faults.Load(); f != nil {
			return float64(read(f))
		}
		return 0
	}
}

// retained returns a reading of the bound broker core's retained
// messages.
func (m *Metrics) retained(read func(*mqtt.TopicsIndex) int64) func() float64 {
	return func() float64 {
		if x := m.topics.Load(); x != nil {
			return float64(read(x))
		}
		return 0
	}
}

// queued returns a reading of the bound broker core's queues.
func (m *Metrics) queued(read func(*mqtt.Queues) int64) func() float64 {
	return func() float64 {
		if q := m.queues.Load(); q != nil {
			return float64(read(q))
		}
		return 0
	}
}

// infoCount returns a reading of a counter of the bound broker core's
// Info.
func (m *Metrics) infoCount(counter func(*mqtt.Info) *int64) func() float64 {
	return func() float64 {
		if i := m.info.Load(); i != nil {
			return float64(atomic.LoadInt64(counter(i)))
		}
		return 0
	}
}

// Collectors returns the metrics for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return append(append(m.RequestMetrics.Collectors(), m.Disconnects,
		m.RefusedPackets, m.Panics, m.RefusedTopics, m.StalledPackets, m.AcceptErrors,
		m.RefusedRetained, m.Retained, m.RetainedBytes, m.LoginsRefused,
		m.QueuedBytes, m.HeldBytes, m.QueueDropsSession, m.QueueDropsTotal, m.DropsUnacknowledged, m.DropsPendingWrites,
	), m.traffic.collectors()...)
}

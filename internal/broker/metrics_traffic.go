package broker

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/wire"
)

// trafficMetrics are the request latencies and the broker's publish,
// subscribe and delivery counters (the figures its $SYS topics publish,
// here for Prometheus).
type trafficMetrics struct {
	// Latency is the time from a request's arrival to its response being
	// handed to the broker, by verb.
	Latency *prometheus.HistogramVec
	// byVerb caches Latency's series per verb (index: wire.Verb).
	byVerb [32]atomic.Pointer[prometheus.Observer]

	// SubscribeFilters counts the topic filters of SUBSCRIBE packets,
	// granted or refused.
	SubscribeFilters *prometheus.CounterVec

	received, sent, bytesIn, bytesOut prometheus.CounterFunc
	subscriptions, inflight           prometheus.GaugeFunc
}

func newTrafficMetrics(info *atomic.Pointer[mqtt.Info]) trafficMetrics {
	count := func(name, help string, field func(*mqtt.Info) *int64) prometheus.CounterFunc {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, readInfo(info, field))
	}
	gauge := func(name, help string, field func(*mqtt.Info) *int64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, readInfo(info, field))
	}
	return trafficMetrics{
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dss_request_duration_seconds",
			Help: "Time from a state store request's arrival to its response, by verb: the store's work, the wait for the journal's fsync (--fsync always) or, in a cluster, for a majority.",
			// 50 µs to about 3.3 s.
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 17),
		}, []string{"verb"}),
		SubscribeFilters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_mqtt_subscribe_filters_total", Help: "Topic filters clients subscribed to, granted or refused (SUBACK reason code 0x80 or above).",
		}, []string{"outcome"}),
		received:      count("dss_mqtt_messages_received_total", "PUBLISH packets received from clients, state store requests included.", func(i *mqtt.Info) *int64 { return &i.MessagesReceived }),
		sent:          count("dss_mqtt_messages_sent_total", "PUBLISH packets delivered to clients: messages, state store responses and notifications.", func(i *mqtt.Info) *int64 { return &i.MessagesSent }),
		bytesIn:       count("dss_mqtt_received_bytes_total", "Bytes received on MQTT connections.", func(i *mqtt.Info) *int64 { return &i.BytesReceived }),
		bytesOut:      count("dss_mqtt_sent_bytes_total", "Bytes sent on MQTT connections.", func(i *mqtt.Info) *int64 { return &i.BytesSent }),
		subscriptions: gauge("dss_mqtt_subscriptions", "Topic filters held by sessions, connected or not.", func(i *mqtt.Info) *int64 { return &i.Subscriptions }),
		inflight:      gauge("dss_mqtt_inflight_messages", "QoS 1 and 2 messages sent to clients and not yet acknowledged.", func(i *mqtt.Info) *int64 { return &i.Inflight }),
	}
}

func readInfo(info *atomic.Pointer[mqtt.Info], field func(*mqtt.Info) *int64) func() float64 {
	return func() float64 {
		if i := info.Load(); i != nil {
			return float64(atomic.LoadInt64(field(i)))
		}
		return 0
	}
}

// observeRequest records a request's latency under its verb ("INVALID"
// for a request that did not parse).
func (m *trafficMetrics) observeRequest(v wire.Verb, d time.Duration) {
	if int(v) >= len(m.byVerb) {
		m.Latency.WithLabelValues(v.String()).Observe(d.Seconds())
		return
	}
	o := m.byVerb[v].Load()
	if o == nil {
		name := v.String()
		if v == 0 {
			name = "INVALID"
		}
		obs := m.Latency.WithLabelValues(name)
		o = &obs
		m.byVerb[v].Store(o)
	}
	(*o).Observe(d.Seconds())
}

// subscribed counts the filters of a SUBSCRIBE by their reason codes.
func (m *trafficMetrics) subscribed(codes []byte) {
	for _, c := range codes {
		if c >= 0x80 {
			m.SubscribeFilters.WithLabelValues("refused").Inc()
		} else {
			m.SubscribeFilters.WithLabelValues("granted").Inc()
		}
	}
}

func (m *trafficMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Latency, m.SubscribeFilters, m.received, m.sent, m.bytesIn, m.bytesOut, m.subscriptions, m.inflight}
}

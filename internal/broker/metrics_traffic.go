package broker

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/service"
)

// trafficMetrics are the request latencies and the broker's publish,
// subscribe and delivery counters (the figures its $SYS topics publish,
// here for Prometheus).
type trafficMetrics struct {
	// Latency is the time from a request's arrival to its response being
	// handed to the broker, by verb.
	Latency *service.Latency

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
		Latency: service.NewLatency(),
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
	return []prometheus.Collector{m.Latency.Collector(), m.SubscribeFilters, m.received, m.sent, m.bytesIn, m.bytesOut, m.subscriptions, m.inflight}
}

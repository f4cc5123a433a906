package attach

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/service"
)

// Metrics counts what the attacher does. The request metrics have the
// names of dss serve's, so that dashboards read either.
type Metrics struct {
	service.RequestMetrics
	// Latency is dss_request_duration_seconds, as dss serve's.
	Latency *service.Latency
	// Duplicates counts requests that arrived again, by what became of
	// them: "pending" (the first is still being carried out),
	// "answered again" (a client's retry got the first result), "redelivery"
	// (the broker's QoS 1 redelivery of a request already answered).
	Duplicates *prometheus.CounterVec

	// Connected is 1 while dss is connected to the broker, Subscribed
	// while its subscription to the request topic is granted too.
	Connected, Subscribed prometheus.Gauge
	Connections           prometheus.Counter
	ConnectionLosses      prometheus.Counter
	ConnectFailures       prometheus.Counter
	// SessionsLost counts reconnections on which the broker had not kept
	// dss's session: the requests it held for dss were lost.
	SessionsLost prometheus.Counter
	// Departures counts the clients the broker said left (presence), and
	// LeasesExpired the KEYNOTIFY registrations dropped at the end of
	// their lease.
	Departures    prometheus.Counter
	LeasesExpired prometheus.Counter
	// Dropped counts responses and notifications dropped, by reason:
	// "outbox_full", the queue for the broker was full; "too_large",
	// larger than the broker takes (its Maximum Packet Size);
	// "unencodable", not an MQTT packet (never seen).
	// QueuedBytes reads the queue.
	Dropped     *prometheus.CounterVec
	QueuedBytes prometheus.GaugeFunc
	queued      atomic.Pointer[outbox]
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		RequestMetrics: service.NewRequestMetrics(),
		Latency:        service.NewLatency(),
		Duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_attach_duplicate_requests_total", Help: "Requests that arrived again, by what became of them: pending (the first was being carried out), answered again (a client's retry got the first result), redelivery (the broker's redelivery of an answered request, not answered twice).",
		}, []string{"outcome"}),
		Connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dss_attach_connected", Help: "1 while dss is connected to the broker it is attached to.",
		}),
		Subscribed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dss_attach_subscribed", Help: "1 while the broker has granted dss's subscription to the request topic on the current connection.",
		}),
		Connections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_attach_connections_total", Help: "Connections to the broker established.",
		}),
		ConnectionLosses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_attach_connection_losses_total", Help: "Connections to the broker lost.",
		}),
		ConnectFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_attach_connect_failures_total", Help: "Attempts to connect to the broker that failed (refused, unreachable, timed out).",
		}),
		SessionsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_attach_sessions_lost_total", Help: "Reconnections on which the broker had not kept dss's session (the requests it held for dss were lost).",
		}),
		Departures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_attach_client_departures_total", Help: "Clients the broker said left or connected anew, whose KEYNOTIFY registrations were dropped.",
		}),
		LeasesExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_attach_keynotify_leases_expired_total", Help: "KEYNOTIFY registrations dropped at the end of their lease.",
		}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_attach_dropped_messages_total", Help: "Responses and notifications dropped, by reason: outbox_full (the queue of messages for the broker was full: dss away from the broker too long), too_large (larger than the broker's Maximum Packet Size), unencodable.",
		}, []string{"reason"}),
	}
	m.QueuedBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dss_attach_queued_bytes", Help: "Bytes of responses and notifications waiting to be sent to the broker.",
	}, func() float64 {
		if o := m.queued.Load(); o != nil {
			return float64(o.queued())
		}
		return 0
	})
	return m
}

// Collectors returns every metric, for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return append(m.RequestMetrics.Collectors(),
		m.Latency.Collector(), m.Duplicates,
		m.Connected, m.Subscribed, m.Connections, m.ConnectionLosses, m.ConnectFailures,
		m.SessionsLost, m.Departures, m.LeasesExpired, m.Dropped, m.QueuedBytes,
	)
}

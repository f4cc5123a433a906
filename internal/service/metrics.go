package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/wire"
)

// RequestMetrics are the state store's request metrics, with the same
// names in dss serve and dss attach so that dashboards read either.
type RequestMetrics struct {
	Requests *prometheus.CounterVec // by verb; count with Count
	// requests holds Requests' counter of each verb, looked up once:
	// a lookup by label hashes the label on every request.
	requests      [wire.VerbKeyInfo + 1]prometheus.Counter
	Refused       *prometheus.CounterVec // requests not executed, by reason
	Errors        *prometheus.CounterVec // requests answered with -ERR, by text
	Notifications prometheus.Counter
	Watches       prometheus.Gauge
}

// NewRequestMetrics returns unregistered request metrics.
func NewRequestMetrics() RequestMetrics {
	m := RequestMetrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_requests_total", Help: "State store requests executed, by verb.",
		}, []string{"verb"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_requests_refused_total", Help: "State store requests refused before execution, by reason.",
		}, []string{"reason"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dss_request_errors_total", Help: "State store requests answered with an error payload, by error text.",
		}, []string{"error"}),
		Notifications: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_notifications_total", Help: "KEYNOTIFY notifications published.",
		}),
		Watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "dss_keynotify_registrations", Help: "Current KEYNOTIFY registrations.",
		}),
	}
	for v := wire.VerbSet; int(v) < len(m.requests); v++ {
		m.requests[v] = m.Requests.WithLabelValues(v.String())
	}
	return m
}

// Count counts a request of verb v in Requests.
func (m *RequestMetrics) Count(v wire.Verb) {
	if int(v) < len(m.requests) && m.requests[v] != nil {
		m.requests[v].Inc()
		return
	}
	m.Requests.WithLabelValues(v.String()).Inc()
}

// Collectors returns the request metrics, for registration.
func (m *RequestMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Requests, m.Refused, m.Errors, m.Notifications, m.Watches}
}

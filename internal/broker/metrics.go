package broker

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what the binding does. Register it with a Prometheus
// registry to export it.
type Metrics struct {
	Requests      *prometheus.CounterVec // by verb
	Refused       *prometheus.CounterVec // requests not executed, by reason
	Errors        *prometheus.CounterVec // requests answered with -ERR, by text
	Notifications prometheus.Counter
	Watches       prometheus.Gauge
	Disconnects   prometheus.Counter // clients disconnected for a forbidden response topic
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	return &Metrics{
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
		Disconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dss_forbidden_response_topic_disconnects_total", Help: "Clients disconnected for naming a forbidden response topic.",
		}),
	}
}

// Collectors returns the metrics for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Requests, m.Refused, m.Errors, m.Notifications, m.Watches, m.Disconnects}
}

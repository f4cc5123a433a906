package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// gauges are the metrics read from the server's state when /metrics is
// scraped.
func (s *Server) gauges() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dss_keys", Help: "Keys stored (including expired keys not yet removed).",
		}, func() float64 { return float64(s.node.Stats().Keys) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dss_store_bytes", Help: "Total length of the stored keys and values, in bytes.",
		}, func() float64 { return float64(s.node.Stats().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "dss_ready", Help: "1 while the server is ready (as /readyz answers 200), 0 otherwise.",
		}, func() float64 {
			if s.Ready() != nil {
				return 0
			}
			return 1
		}),
	}
}

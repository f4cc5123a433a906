package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
)

// brokerCollector reports, when scraped, the broker's part of the
// cluster: the stream of messages to each peer, and the replicated
// routes, retained messages and client ids.
type brokerCollector struct {
	n                                  *Node
	up, buffered, bufferedBytes, route *prometheus.Desc
}

func newBrokerCollector(n *Node) *brokerCollector {
	return &brokerCollector{
		n:             n,
		up:            prometheus.NewDesc("dss_cluster_relay_peer_up", "1 while the peer acknowledges the MQTT messages this node sends it, 0 while it cannot be reached.", []string{"peer"}, nil),
		buffered:      prometheus.NewDesc("dss_cluster_relay_buffered_messages", "Messages for the peer that it has not acknowledged (kept while it cannot be reached).", []string{"peer"}, nil),
		bufferedBytes: prometheus.NewDesc("dss_cluster_relay_buffered_bytes", "The bytes of the messages for the peer that it has not acknowledged.", []string{"peer"}, nil),
		route:         prometheus.NewDesc("dss_cluster_routes", "Routes (filters with subscribers) of each node in the broker's replicated state.", []string{"node"}, nil),
	}
}

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.buffered
	ch <- c.bufferedBytes
	ch <- c.route
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.n.RelayPeers() {
		up := 0.0
		if p.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, p.ID)
		ch <- prometheus.MustNewConstMetric(c.buffered, prometheus.GaugeValue, float64(p.Buffered), p.ID)
		ch <- prometheus.MustNewConstMetric(c.bufferedBytes, prometheus.GaugeValue, float64(p.BufferedBytes), p.ID)
	}
	for node, n := range c.n.ps.RouteCounts() {
		ch <- prometheus.MustNewConstMetric(c.route, prometheus.GaugeValue, float64(n), node)
	}
}

// brokerCollectors are the broker's figures of the cluster for /metrics.
func (n *Node) brokerCollectors() []prometheus.Collector {
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dss_cluster_relay_" + name, Help: help}, f)
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dss_cluster_" + name, Help: help}, f)
	}
	r := n.relay
	return []prometheus.Collector{
		newBrokerCollector(n),
		counter("messages_sent_total", "MQTT messages this node sent to other nodes that acknowledged them.", func() float64 { return float64(r.sent.Load()) }),
		counter("messages_received_total", "MQTT messages other nodes sent this node, delivered to its subscribers.", func() float64 { return float64(r.received.Load()) }),
		counter("messages_dropped_total", "MQTT messages for another node dropped: QoS 0 while it could not be reached, or the oldest past --cluster-relay-buffer.", func() float64 { return float64(r.dropped.Load()) }),
		counter("messages_expired_total", "MQTT messages from other nodes that expired before they arrived.", func() float64 { return float64(r.expired.Load()) }),
		gauge("retained_messages", "Retained messages in the broker's replicated state.", func() float64 { return float64(n.ps.RetainedCount()) }),
		gauge("client_ids", "Client ids in the broker's replicated state: connected, or of persistent sessions.", func() float64 { return float64(n.ps.SessionCount()) }),
	}
}

package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/broker"
)

// newBroker makes dss's own MQTT broker the front end (dss serve).
func (s *Server) newBroker(reg *prometheus.Registry) error {
	cfg := &s.cfg
	metrics := broker.NewMetrics()
	reg.MustRegister(metrics.Collectors()...)
	reg.MustRegister(s.clientsGauge())
	sec, err := cfg.loadSecurity()
	if err != nil {
		s.closeStorage()
		return err
	}
	s.sec = sec
	var span broker.Cluster
	if s.cluster != nil {
		span = s.cluster
	}
	b, err := broker.New(broker.Config{
		Listen:               cfg.Listen,
		Listener:             cfg.Listener,
		Logger:               cfg.Logger,
		Metrics:              metrics,
		MaxPacketSize:        cfg.MaxPacketSize,
		Capabilities:         cfg.Capabilities,
		ReadLoops:            cfg.ReadLoops,
		ConnectTimeout:       cfg.ConnectTimeout,
		PacketReadTimeout:    cfg.PacketReadTimeout,
		MaxKeySize:           cfg.MaxKeySize,
		MaxValueSize:         cfg.MaxValueSize,
		MaxWatchesPerClient:  max(cfg.MaxWatchesPerClient, 0),
		Auth:                 sec.authority,
		LoginDelay:           cfg.LoginDelay,
		TLSListen:            sec.tlsListen(cfg),
		TLS:                  sec.tlsConfig(),
		WSListen:             cfg.WSListen,
		WSSListen:            cfg.WSSListen,
		WSOrigins:            cfg.WSOrigins,
		MaxInflightPerClient: cfg.MaxInflightPerClient,
		MaxSessionQueueBytes: max(cfg.MaxSessionQueueBytes, 0),
		MaxQueuedBytes:       max(cfg.MaxQueuedBytes, 0),
		// SUBACK 0x97 past it.
		MaxSubscriptionsPerClient: max(cfg.MaxSubscriptionsPerClient, 0),
		MaxTopicLevels:            cfg.MaxTopicLevels,
		MaxTopicLength:            cfg.MaxTopicLength,
		MaxRetained:               max(cfg.MaxRetained, 0),
		MaxRetainedBytes:          max(cfg.MaxRetainedBytes, 0),
		// One broker across the cluster's nodes.
		Cluster: span,
	})
	if err != nil {
		s.closeStorage()
		return err
	}
	s.broker, s.front = b, b
	if err := cfg.checkListeners(b.Addr(), b.TLSAddr(), b.WSAddr(), b.WSSAddr(), cfg.Logger); err != nil {
		_ = b.Close(0)
		s.closeStorage()
		return err
	}
	return nil
}

// newAttacher makes a client of another broker the front end (dss
// attach): the store serves that broker's clients from outside.
func (s *Server) newAttacher(reg *prometheus.Registry) error {
	cfg := *s.cfg.Attach
	cfg.Logger = s.cfg.Logger
	if cfg.Metrics == nil {
		cfg.Metrics = attach.NewMetrics()
	}
	reg.MustRegister(cfg.Metrics.Collectors()...)
	cfg.MaxKeySize = s.cfg.MaxKeySize
	if cfg.MaxKeySize == 0 {
		cfg.MaxKeySize = broker.DefaultMaxKeySize
	}
	cfg.MaxValueSize = s.cfg.MaxValueSize
	if cfg.MaxValueSize == 0 {
		cfg.MaxValueSize = broker.DefaultMaxValueSize
	}
	cfg.MaxWatchesPerClient = max(s.cfg.MaxWatchesPerClient, 0)
	a, err := attach.New(cfg)
	if err != nil {
		return err
	}
	s.attach, s.front = a, a
	s.sec = &security{}
	s.readiness = append(s.readiness, a)
	return nil
}

// clientsGauge is dss_clients_connected, of dss's own broker.
func (s *Server) clientsGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dss_clients_connected", Help: "MQTT clients connected.",
	}, func() float64 { return float64(s.broker.Clients()) })
}

package server

import (
	"errors"
	"fmt"
	"net/http"
)

// A ReadinessCheck is one condition of readiness: Ready returns nil while
// it holds, or why it does not. *Server is one (all of its conditions
// together); a component with a condition of its own (a cluster that needs
// a leader) implements it and is added to Server.readiness in New.
type ReadinessCheck interface {
	Ready() error
}

var _ ReadinessCheck = (*Server)(nil)

// Why a server is not ready.
var (
	ErrStarting     = errors.New("starting: the listeners do not accept clients yet")
	ErrShuttingDown = errors.New("shutting down")
)

// Ready reports whether the server serves requests: the journal is
// recovered (New returned), the listeners were started (Start returned)
// and accept clients still (not out of descriptors), the server is not
// shutting down, the journal has not failed, and every added condition
// holds.
func (s *Server) Ready() error {
	switch {
	case s.stopping.Load():
		return ErrShuttingDown
	case !s.started.Load():
		return ErrStarting
	}
	if err := s.storageErr(); err != nil {
		return fmt.Errorf("the journal failed: %w", err)
	}
	if s.broker != nil {
		if err := s.broker.Accepting(); err != nil {
			return err
		}
	}
	for _, c := range s.readiness {
		if err := c.Ready(); err != nil {
			return err
		}
	}
	return nil
}

// serveReady answers /readyz: 200 "ready" or 503 with the reason.
func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	if err := s.Ready(); err != nil {
		http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ready\n"))
}

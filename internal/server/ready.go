package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
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

// serveReady answers /readyz: 200 "ready" or 503 with the reason, and
// in a cluster a line for each peer this node cannot reach with MQTT
// messages (which does not make it unready: it serves its clients).
func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	var notes string
	if s.cluster != nil {
		for _, p := range s.cluster.RelayPeers() {
			if !p.Up {
				notes += fmt.Sprintf("messages to %s fail since %s: %s\n", p.ID, p.Since.UTC().Format(time.RFC3339), p.Err)
			}
		}
	}
	if err := s.Ready(); err != nil {
		// http.Error ends the body with a newline.
		http.Error(w, strings.TrimSuffix("not ready: "+err.Error()+"\n"+notes, "\n"), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ready\n" + notes))
}

package server

// WSAddr returns the address of the MQTT over WebSocket listener, or ""
// when there is none (or dss is attached to another broker).
func (s *Server) WSAddr() string {
	if s.broker == nil {
		return ""
	}
	return s.broker.WSAddr()
}

// WSSAddr returns the address of the listener of MQTT over WebSocket over
// TLS, or "" when there is none (or dss is attached to another broker).
func (s *Server) WSSAddr() string {
	if s.broker == nil {
		return ""
	}
	return s.broker.WSSAddr()
}

package server

// WSAddr returns the address of the MQTT over WebSocket listener, or ""
// when there is none.
func (s *Server) WSAddr() string { return s.broker.WSAddr() }

// WSSAddr returns the address of the listener of MQTT over WebSocket over
// TLS, or "" when there is none.
func (s *Server) WSSAddr() string { return s.broker.WSSAddr() }

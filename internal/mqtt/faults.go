// SPDX-License-Identifier: MIT

package mqtt

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: a malformed packet, a protocol error or a panic while handling a
// packet ends the connection it came on, and only that one. Upstream
// closed the connection of a malformed packet without a word, and a
// panic while handling one connection's packet took the whole process
// down.

// Faults counts what went wrong with connections, for metrics. Its
// counters only grow.
type Faults struct {
	// RefusedPackets counts packets refused as malformed (0x81), as
	// protocol errors (0x82) or as too large (0x95): the connection that
	// sent one is closed.
	RefusedPackets atomic.Int64
	// Panics counts panics while serving a connection, each contained to
	// that connection, which is closed.
	Panics atomic.Int64
	// RefusedTopics counts topic names and filters refused for their
	// levels or length (Options.MaxTopicLevels, MaxTopicLength): in a
	// PUBLISH, SUBSCRIBE, UNSUBSCRIBE or a Will.
	RefusedTopics atomic.Int64
	// StalledPackets counts connections closed because a packet stopped
	// arriving for Options.PacketReadTimeout.
	StalledPackets atomic.Int64
	// RefusedRetained counts clients' messages to retain refused for
	// the bounds of retained messages (Options.MaxRetained,
	// MaxRetainedBytes).
	RefusedRetained atomic.Int64
}

// ErrConnectionPanicked ends a connection on which handling a packet
// panicked.
var ErrConnectionPanicked = errors.New("panic while serving the connection")

// PacketError is a packet that could not be read: malformed, a protocol
// error or too large. Err is the packets.Code that says why.
type PacketError struct {
	Type      byte // the type in its fixed header
	Remaining int  // the length its fixed header gave; -1 when unknown
	Err       error
}

func (e *PacketError) Error() string {
	return fmt.Sprintf("%s packet of %d bytes: %v", packetName(e.Type), e.Remaining, e.Err)
}

func (e *PacketError) Unwrap() error { return e.Err }

// packetError wraps err, an error of decoding the packet of fixed header
// fh, as a PacketError when it is a reason code; other errors (of the
// connection) are returned as they are.
func packetError(fh *packets.FixedHeader, remaining int, err error) error {
	var code packets.Code
	if err == nil || !errors.As(err, &code) {
		return err
	}
	return &PacketError{Type: fh.Type, Remaining: remaining, Err: err}
}

func packetName(typ byte) string {
	if name, ok := packets.PacketNames[typ]; ok {
		return name
	}
	return fmt.Sprintf("type %d", typ)
}

// failureCode returns the reason code err carries, if it is a failure
// (0x80 or above).
func failureCode(err error) (packets.Code, bool) {
	var code packets.Code
	if !errors.As(err, &code) || code.Code < packets.ErrUnspecifiedError.Code {
		return packets.Code{}, false
	}
	return code, true
}

// faultLog limits the log lines about refused packets and panics, so
// that misbehaving clients cannot flood the log: every one is counted in
// Faults all the same.
func newFaultLog() *rate.Limiter { return rate.NewLimiter(rate.Every(time.Second), 20) }

// readFailed answers a connection whose packets could not be read any
// further because of err (Client.Read's error): a packet that could not
// be read is counted, logged (one line: the client, the reason and the
// sizes), and answered with DISCONNECT and its reason code when the
// client speaks MQTT 5. The caller closes the connection.
func (s *Server) readFailed(cl *Client, err error) {
	if errors.Is(err, errPacketStalled) {
		s.Faults.StalledPackets.Add(1)
		if s.faultLog.Allow() {
			s.Log.Warn("a packet stopped arriving; closing the connection", "client", cl.ID, "remote", cl.Net.Remote,
				"listener", cl.Net.Listener, "timeout", s.Options.PacketReadTimeout)
		}
		return
	}
	var pe *PacketError
	if !errors.As(err, &pe) {
		return
	}
	s.Faults.RefusedPackets.Add(1)
	code, _ := failureCode(err)
	if s.faultLog.Allow() {
		s.Log.Warn("packet refused; closing the connection", "client", cl.ID, "remote", cl.Net.Remote,
			"listener", cl.Net.Listener, "type", packetName(pe.Type), "bytes", pe.Remaining,
			"reason", code.Reason, "reason_code", code.Code)
	}
	if cl.Properties.ProtocolVersion == 5 && !cl.Closed() && code.Code != 0 {
		_ = s.DisconnectClient(cl, code)
	}
}

// connectFailed answers a connection whose CONNECT could not be read
// because of err: a CONNECT that says MQTT 5 (version, as far as it was
// decoded) gets a CONNACK with the reason code.
func (s *Server) connectFailed(cl *Client, version byte, err error) {
	var pe *PacketError
	if !errors.As(err, &pe) {
		return
	}
	s.Faults.RefusedPackets.Add(1)
	code, _ := failureCode(err)
	if s.faultLog.Allow() {
		s.Log.Warn("CONNECT refused; closing the connection", "remote", cl.Net.Remote,
			"listener", cl.Net.Listener, "type", packetName(pe.Type), "bytes", pe.Remaining,
			"reason", code.Reason, "reason_code", code.Code)
	}
	switch {
	case code == packets.ErrUnsupportedProtocolVersion:
		// dss: a client of a version the server does not speak is told so
		// in the CONNACK of the version nearest to its own [MQTT-3.1.2-2]:
		// MQTT 5's 0x84 to a later one, MQTT 3.1.1's 0x01 to an earlier
		// one.
		cl.Properties.ProtocolVersion = 4
		if version > 5 {
			cl.Properties.ProtocolVersion = 5
		}
		_ = s.SendConnack(cl, code, false, nil)
	case version == 5 && code.Code != 0:
		cl.Properties.ProtocolVersion = 5
		_ = s.SendConnack(cl, code, false, nil)
	}
}

// panicked records a panic while serving cl, which value r carried: it
// is counted and logged with the stack. It returns the error that ends
// the connection.
func (f *Faults) panicked(log *slog.Logger, limit *rate.Limiter, cl *Client, r any) error {
	f.Panics.Add(1)
	if limit.Allow() {
		log.Error("panic while serving a connection; the connection is closed", "client", cl.ID,
			"remote", cl.Net.Remote, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	}
	return fmt.Errorf("%w: %v", ErrConnectionPanicked, r)
}

// readClient reads and handles cl's packets until the connection ends,
// as Client.Read does; a panic on the way ends the connection with
// ErrConnectionPanicked instead of the process.
func (s *Server) readClient(cl *Client) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.Faults.panicked(s.Log, s.faultLog, cl, r)
		}
	}()
	return cl.Read(s.receivePacket)
}

// LogValue is what a log line shows of a will: its topic and sizes,
// never its payload.
func (w Will) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("topic", w.TopicName),
		slog.Int("qos", int(w.Qos)),
		slog.Int("payload_bytes", len(w.Payload)))
}

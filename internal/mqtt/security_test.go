package mqtt

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// refusingHook refuses every connection in OnConnect with code.
type refusingHook struct {
	HookBase
	code packets.Code
}

func (h *refusingHook) ID() string { return "refusing" }

func (h *refusingHook) Provides(b byte) bool { return b == OnConnect }

func (h *refusingHook) OnConnect(cl *Client, pk packets.Packet) error { return h.code }

// connackOf connects over a pipe with an MQTT 5 CONNECT and returns the
// reason code of the CONNACK the server answers with, and the error
// EstablishConnection returned.
func connackOf(t *testing.T, s *Server, connect []byte) (byte, error) {
	t.Helper()
	r, w := net.Pipe()
	defer w.Close()
	o := make(chan error, 1)
	go func() { o <- s.EstablishConnection("tcp", r) }()
	go func() { _, _ = w.Write(connect) }()
	recv := make(chan []byte, 1)
	go func() {
		buf, _ := io.ReadAll(w)
		recv <- buf
	}()
	err := <-o
	_ = r.Close()
	buf := <-recv
	require.GreaterOrEqual(t, len(buf), 4, "no CONNACK")
	require.Equal(t, byte(packets.Connack<<4), buf[0])
	return buf[3], err
}

func TestOnConnectRefusalIsAnsweredWithItsReasonCode(t *testing.T) {
	s := New(&Options{Logger: logger})
	defer s.Close()
	require.NoError(t, s.AddHook(&refusingHook{code: packets.ErrNotAuthorized}, nil))
	code, err := connackOf(t, s, packets.TPacketData[packets.Connect].Get(packets.TConnectMqtt5).RawBytes)
	require.ErrorIs(t, err, packets.ErrNotAuthorized)
	require.Equal(t, packets.ErrNotAuthorized.Code, code)
}

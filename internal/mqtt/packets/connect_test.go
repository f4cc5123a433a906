package packets

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A user name is a UTF-8 Encoded String [MQTT-3.1.3-12]: one that is not
// makes the CONNECT a Malformed Packet.
func TestConnectDecodeUserNameNotUTF8(t *testing.T) {
	body := func(user ...byte) []byte {
		b := []byte{0, 4, 'M', 'Q', 'T', 'T', 5, 0x82, 0, 30, 0, 0, 1, 'c', 0, byte(len(user))}
		return append(b, user...)
	}
	for _, user := range [][]byte{{0xff}, {'a', 0x00}, {0xed, 0xa0, 0x80}} {
		var pk Packet
		require.ErrorIs(t, pk.ConnectDecode(body(user...)), ErrMalformedUsername, "% x", user)
	}
	var pk Packet
	require.NoError(t, pk.ConnectDecode(body('u', 0xc3, 0xa9)))
	require.Equal(t, "ué", string(pk.Connect.Username))
}

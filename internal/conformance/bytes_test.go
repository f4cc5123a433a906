package conformance

// Packets written byte by byte, for what the broker's own encoder cannot
// produce: a property twice, a value the encoder leaves out (0), a string
// that is not UTF-8, a protocol version it does not know.

// property ids of MQTT 5 (2.2.2.2).
const (
	propPayloadFormat     = 0x01
	propMessageExpiry     = 0x02
	propContentType       = 0x03
	propResponseTopic     = 0x08
	propCorrelationData   = 0x09
	propSessionExpiry     = 0x11
	propReceiveMaximum    = 0x21
	propTopicAliasMaximum = 0x22
	propTopicAlias        = 0x23
	propMaximumPacketSize = 0x27
)

// varint is n as a Variable Byte Integer (1.5.5).
func varint(n int) []byte {
	var b []byte
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// str is s as a UTF-8 Encoded String (or any bytes as one: 1.5.4).
func str(s []byte) []byte {
	return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...)
}

// prop is one property: its id and its value as encoded.
func prop(id byte, value ...byte) []byte {
	return append([]byte{id}, value...)
}

func u16(n uint16) []byte { return []byte{byte(n >> 8), byte(n)} }

func u32(n uint32) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

// packet is a control packet of first byte b0 with body as its variable
// header and payload.
func packet(b0 byte, body ...[]byte) []byte {
	var rest []byte
	for _, b := range body {
		rest = append(rest, b...)
	}
	return append(append([]byte{b0}, varint(len(rest))...), rest...)
}

// properties is the property block of props: its length, then them.
func properties(props ...[]byte) []byte {
	var all []byte
	for _, p := range props {
		all = append(all, p...)
	}
	return append(varint(len(all)), all...)
}

// rawPublish is a PUBLISH of QoS 1, packet id 1, with props.
func rawPublish(topic string, payload string, props ...[]byte) []byte {
	return packet(0x32, str([]byte(topic)), u16(1), properties(props...), []byte(payload))
}

// rawConnect is a CONNECT of protocol version version for client id with
// Clean Start, keep alive 30, props, and user name user when not nil.
func rawConnect(version byte, id string, user []byte, props ...[]byte) []byte {
	flags := byte(0x02)
	var payload []byte
	payload = append(payload, str([]byte(id))...)
	if user != nil {
		flags |= 0x80
		payload = append(payload, str(user)...)
	}
	return packet(0x10, str([]byte("MQTT")), []byte{version, flags}, u16(30), properties(props...), payload)
}

// write writes b as it is.
func (c *raw) write(b []byte) {
	c.t.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// SPDX-License-Identifier: MIT

package packets

import "log/slog"

// maxLoggedTopic bounds the bytes of a topic that a log line shows.
const maxLoggedTopic = 256

// LogValue is what a log line shows of a packet: its type, identifiers
// and sizes, never its payload, its will message, its password or its
// properties' values. dss: log lines took the whole packet, so that one
// malformed packet of 31 MB wrote a log line of its bytes in decimal,
// and a CONNECT refused for a protocol error logged its password.
func (pk Packet) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("type", PacketNames[pk.FixedHeader.Type]),
		slog.Int("remaining", pk.FixedHeader.Remaining))
	if pk.PacketID != 0 {
		attrs = append(attrs, slog.Int("id", int(pk.PacketID)))
	}
	switch pk.FixedHeader.Type {
	case Publish:
		attrs = append(attrs,
			slog.Int("qos", int(pk.FixedHeader.Qos)),
			slog.String("topic", loggedTopic(pk.TopicName)),
			slog.Int("payload_bytes", len(pk.Payload)))
	case Subscribe, Unsubscribe:
		attrs = append(attrs, slog.Int("filters", len(pk.Filters)))
	case Connect:
		attrs = append(attrs, slog.Any("connect", pk.Connect))
	}
	if pk.ReasonCode != 0 {
		attrs = append(attrs, slog.Int("reason_code", int(pk.ReasonCode)))
	}
	return slog.GroupValue(attrs...)
}

// LogValue shows the CONNECT's client id, flags and sizes, never its
// password or will message.
func (c ConnectParams) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("client_id", loggedTopic(c.ClientIdentifier)),
		slog.Int("keepalive", int(c.Keepalive)),
		slog.Bool("clean", c.Clean),
		slog.Int("username_bytes", len(c.Username)),
		slog.Int("password_bytes", len(c.Password)),
		slog.Bool("will", c.WillFlag),
		slog.Int("will_payload_bytes", len(c.WillPayload)))
}

// loggedTopic returns s as a log line shows it: cut to maxLoggedTopic
// bytes.
func loggedTopic(s string) string {
	if len(s) <= maxLoggedTopic {
		return s
	}
	return s[:maxLoggedTopic] + "…"
}

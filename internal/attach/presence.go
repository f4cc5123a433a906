package attach

import (
	"encoding/json"
	"strings"
)

// A presence source reads the broker's news of clients that connect and
// disconnect. Either means that the client's earlier connection, and with
// it every KEYNOTIFY registration it made, is gone: a client that
// connects anew registers again.
type presenceSource struct {
	// filters are the topics dss subscribes to.
	filters []string
	// matches reports whether a message's topic is the source's.
	matches func(topic string) bool
	// client returns the client id a message names, or "".
	client func(topic string, payload []byte) string
}

func newPresenceSource(p Presence) *presenceSource {
	switch p {
	case PresenceMosquitto:
		return &presenceSource{
			filters: []string{mosquittoLogNotice, mosquittoLogInfo},
			matches: func(t string) bool { return t == mosquittoLogNotice || t == mosquittoLogInfo },
			client:  func(_ string, payload []byte) string { return mosquittoClient(string(payload)) },
		}
	case PresenceEMQX:
		return &presenceSource{
			filters: []string{emqxConnected, emqxDisconnected},
			matches: func(t string) bool {
				return strings.HasPrefix(t, "$SYS/brokers/") && (strings.HasSuffix(t, "/connected") || strings.HasSuffix(t, "/disconnected"))
			},
			client: emqxClient,
		}
	}
	return nil
}

// Mosquitto publishes its log on $SYS/broker/log/<level> with log_dest
// topic; connection_messages (on by default) puts every connection and
// disconnection in it, at the levels notice and information.
const (
	mosquittoLogNotice = "$SYS/broker/log/N"
	mosquittoLogInfo   = "$SYS/broker/log/I"
)

// mosquittoLines are the forms of Mosquitto 2's log lines that name a
// client whose connection began or ended, as a prefix and a suffix around
// the client id.
var mosquittoLines = []struct{ prefix, suffix string }{
	{"New client connected from ", ""}, // "... from HOST:PORT as ID (p5, c1, k60[, u'NAME'])."
	{"Client ", " disconnected."},
	{"Client ", " closed its connection."},
	{"Client ", " has exceeded timeout, disconnecting."},
	{"Client ", " already connected, closing old connection."},
	{"Client ", " disconnected due to malformed packet."},
	{"Client ", " disconnected due to protocol error."},
	{"Client ", " failed authentication, disconnecting."},
	{"Client ", " disconnected due to oversize packet."},
	{"Client ", " disconnected due to oversize payload."},
	{"Client ", " disconnected due to out of memory."},
	{"Client ", " been disconnected by administrative action."},
	{"Client ", " disconnected, not authorised."},
	{"Socket error on client ", ", disconnecting."},
}

// mosquittoClient returns the client id of a Mosquitto log line about a
// connection that began or ended, or "".
func mosquittoClient(line string) string {
	// Lines on the topic start with the time: "1700000000: Client ...".
	if i := strings.Index(line, ": "); i > 0 && isDigits(line[:i]) {
		line = line[i+2:]
	}
	line = strings.TrimRight(line, "\r\n")
	if rest, ok := strings.CutPrefix(line, "New client connected from "); ok {
		// The address has no spaces; the id may have, but is followed by
		// " (p<protocol>, c<clean>, k<keep alive>...".
		_, rest, ok = strings.Cut(rest, " as ")
		if !ok {
			return ""
		}
		i := strings.LastIndex(rest, " (p")
		if i < 0 {
			return ""
		}
		return rest[:i]
	}
	for _, f := range mosquittoLines[1:] {
		if id, ok := cut(line, f.prefix, f.suffix); ok {
			return id
		}
	}
	// "Client ID disconnected: REASON." and "Bad socket read/write on
	// client ID: REASON".
	if rest, ok := strings.CutPrefix(line, "Client "); ok {
		if i := strings.LastIndex(rest, " disconnected: "); i > 0 {
			return rest[:i]
		}
	}
	if rest, ok := strings.CutPrefix(line, "Bad socket read/write on client "); ok {
		if i := strings.LastIndex(rest, ": "); i > 0 {
			return rest[:i]
		}
	}
	return ""
}

func cut(s, prefix, suffix string) (string, bool) {
	if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) || len(s) <= len(prefix)+len(suffix) {
		return "", false
	}
	return s[len(prefix) : len(s)-len(suffix)], true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// EMQX publishes client events under $SYS/brokers/<node>/clients/<id>/:
// connected and disconnected, with a JSON payload that names the client.
const (
	emqxConnected    = "$SYS/brokers/+/clients/+/connected"
	emqxDisconnected = "$SYS/brokers/+/clients/+/disconnected"
)

// emqxClient returns the client id of an EMQX client event, from its
// payload ({"clientid": ...}), which holds it whole where the topic may
// not (a client id may contain '/').
func emqxClient(_ string, payload []byte) string {
	var ev struct {
		ClientID string `json:"clientid"`
	}
	if json.Unmarshal(payload, &ev) != nil {
		return ""
	}
	return ev.ClientID
}

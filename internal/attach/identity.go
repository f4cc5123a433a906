package attach

import (
	"encoding/hex"
	"strings"

	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// The response topics whose client id dss reads when a request carries no
// __srcId: the one the protocol recommends, and the vendor's clients'
// (and dss's own), which has the client id in upper-case hex.
const (
	recommendedInfix = "/services/statestore/"
	vendorSuffix     = "/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response"
	clientsPrefix    = "clients/"
)

// requester returns the client id a request names for its sender: its
// __srcId, or else the client id in its response topic when the topic is
// of one of the usual forms; "" when it names none.
//
// Neither is proven: the broker does not tell dss who published a
// request. What keeps one client from reading another's responses and
// notifications is the broker's ACL on the topics (docs/attach.md); the
// id serves to name the notification topic and to recognise a request
// sent again.
func requester(env *service.Envelope, responseTopic string) string {
	if env.SourceID != "" {
		return env.SourceID
	}
	return clientIDOfTopic(responseTopic)
}

// clientIDOfTopic reads the client id in a response topic of the forms
// clients/{id}/services/statestore/... and
// clients/{HEX(id)}/statestore/v1/FA9AE35F-.../command/invoke/response.
func clientIDOfTopic(topic string) string {
	rest, ok := strings.CutPrefix(topic, clientsPrefix)
	if !ok {
		return ""
	}
	if h, ok := strings.CutSuffix(rest, vendorSuffix); ok {
		if len(h) == 0 || strings.ToUpper(h) != h {
			return ""
		}
		id, err := hex.DecodeString(h)
		if err != nil {
			return ""
		}
		return string(id)
	}
	if i := strings.LastIndex(rest, recommendedInfix); i > 0 {
		return rest[:i]
	}
	return ""
}

// mayNotify reports whether id can name a notification topic: MQTT topics
// are at most 65,535 bytes, and the key's share of it is checked when
// KEYNOTIFY registers.
func mayNotify(id string) bool {
	return id != "" && wire.NotifyTopicLen(len(id), 0) <= wire.MaxTopicLen
}

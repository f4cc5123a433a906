package service

import (
	"strings"

	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// Why a request is refused before it reaches the store: the Reason
// String of dss serve's PUBACK, the __stMsg of the answer on the response
// topic (Refusal), and the log line of either front end.
const (
	ReasonNoResponseTopic      = "state store request without Response Topic"
	ReasonNoCorrelation        = "state store request without Correlation Data"
	ReasonWildcardResponse     = "state store request with a wildcard in its Response Topic"
	ReasonNeedsQoS1            = "state store requests must be sent with QoS 1"
	ReasonNeedsQoS1Correlation = "state store requests must be sent with QoS 1 and carry Correlation Data"
	ReasonDraining             = "the state store is shutting down"
	ReasonForbiddenResponse    = "the Response Topic of a state store request may not be the request topic or under " + wire.ReservedPrefix
)

// Refusal returns the payload and user properties of the answer to a
// request refused for its envelope (QoS 0, no Correlation Data), sent on
// its Response Topic when it has a usable one (MayAnswerOn): a QoS 0
// request has no PUBACK, and request/response tools (mosquitto_rr) show
// only what arrives on the Response Topic. __stat is 400 with the reason
// in __stMsg, and the payload is the reason as a RESP3 error, so that a
// person reading the payload sees it too. The answer carries the
// request's Correlation Data, if any; the request is not executed.
//
// A vendor client always sends QoS 1 with Correlation Data and never
// gets this answer.
func Refusal(reason string) (payload []byte, props []Property) {
	return resp.AppendError(nil, "ERR "+reason), []Property{
		{Key: wire.PropStatus, Value: wire.StatusBadRequest},
		{Key: wire.PropStatusMessage, Value: reason},
		{Key: wire.PropProtocolVersion, Value: wire.ProtocolVersion},
	}
}

// MayAnswerOn reports whether a refused request's Response Topic can
// carry an answer: it is given, is not one a client may not name, and
// has no wildcard.
func MayAnswerOn(responseTopic string) bool {
	return responseTopic != "" && !wire.ForbiddenResponseTopic(responseTopic) && !strings.ContainsAny(responseTopic, "+#")
}

// NeedsQoS1 is the reason a request sent with QoS 0 (or 2) is refused:
// it names the missing Correlation Data too, so that one answer says all
// that is wrong.
func NeedsQoS1(hasCorrelation bool) string {
	if hasCorrelation {
		return ReasonNeedsQoS1
	}
	return ReasonNeedsQoS1Correlation
}

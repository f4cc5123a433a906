package broker

import (
	"bytes"
	"strings"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// tellRefused answers a request refused for its envelope (QoS 0 or 2, no
// Correlation Data) on its Response Topic, when it has a usable one: the
// PUBACK's reason code and Reason String say why as well, but a QoS 0
// request has no PUBACK, and request/response tools (mosquitto_rr) wait
// for a message on the Response Topic and show none of a PUBACK. The
// answer carries the request's Correlation Data (if any), __stat 400 with
// the reason in __stMsg, and the reason as a RESP3 error payload, so that
// a person reading the payload sees it too. The request is not executed.
//
// A vendor client always sends QoS 1 with Correlation Data and never
// gets this answer.
func (b *Broker) tellRefused(cl *mqtt.Client, pk *packets.Packet, code packets.Code) {
	topic := pk.Properties.ResponseTopic
	if topic == "" || wire.ForbiddenResponseTopic(topic) || strings.ContainsAny(topic, "+#") {
		return
	}
	// The connection reads its next packet into the request's memory:
	// the answer holds copies.
	answer := &packets.Packet{
		FixedHeader: packets.FixedHeader{Qos: 1},
		TopicName:   strings.Clone(topic),
		Payload:     resp.AppendError(nil, "ERR "+code.Reason),
		Properties: packets.Properties{
			CorrelationData: bytes.Clone(pk.Properties.CorrelationData),
			ContentType:     wire.ContentType,
			User: []packets.UserProperty{
				{Key: wire.PropStatus, Val: wire.StatusBadRequest},
				{Key: wire.PropStatusMessage, Val: code.Reason},
				{Key: wire.PropProtocolVersion, Val: wire.ProtocolVersion},
			},
		},
	}
	b.publishWithAck(answer, cl, nil, true, nil)
}

// needsQoS1 is the refusal of a request sent with QoS 0 or 2: it names
// the missing Correlation Data too, so that one answer says all that is
// wrong.
func needsQoS1(props *packets.Properties) packets.Code {
	if len(props.CorrelationData) == 0 {
		return codeNeedsQoS1Correlation
	}
	return codeNeedsQoS1
}

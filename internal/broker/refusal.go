package broker

import (
	"bytes"
	"strings"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// tellRefused answers a request refused for its envelope (QoS 0 or 2, no
// Correlation Data) on its Response Topic, when it has a usable one: the
// PUBACK's reason code and Reason String say why as well, but a QoS 0
// request has no PUBACK, and request/response tools (mosquitto_rr) wait
// for a message on the Response Topic and show none of a PUBACK. The
// answer is service.Refusal's; the request is not executed.
func (b *Broker) tellRefused(cl *mqtt.Client, pk *packets.Packet, code packets.Code) {
	topic := pk.Properties.ResponseTopic
	if !service.MayAnswerOn(topic) {
		return
	}
	payload, props := service.Refusal(code.Reason)
	user := make([]packets.UserProperty, len(props))
	for i, p := range props {
		user[i] = packets.UserProperty{Key: p.Key, Val: p.Value}
	}
	// The connection reads its next packet into the request's memory:
	// the answer holds copies.
	answer := &packets.Packet{
		FixedHeader: packets.FixedHeader{Qos: 1},
		TopicName:   strings.Clone(topic),
		Payload:     payload,
		Properties: packets.Properties{
			CorrelationData: bytes.Clone(pk.Properties.CorrelationData),
			ContentType:     wire.ContentType,
			User:            user,
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

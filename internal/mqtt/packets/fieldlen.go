// SPDX-License-Identifier: MIT

package packets

import "math"

// ErrFieldTooLong refuses to encode a packet with a string or binary field
// longer than its 16-bit length can say. dss: the length was written
// modulo 65,536, so that a topic of 70,000 bytes went out as a malformed
// packet (a state store notification for a key of over 32 KiB).
var ErrFieldTooLong = Code{Code: 0x81, Reason: "malformed packet: a string or binary field is longer than 65,535 bytes"}

// fieldsFit reports ErrFieldTooLong when a string or binary field of pk
// that an encoding writes with a 16-bit length is longer than 65,535
// bytes.
func (pk *Packet) fieldsFit() error {
	if len(pk.TopicName) > math.MaxUint16 ||
		len(pk.Connect.ClientIdentifier) > math.MaxUint16 || len(pk.Connect.WillTopic) > math.MaxUint16 ||
		len(pk.Connect.WillPayload) > math.MaxUint16 || len(pk.Connect.Username) > math.MaxUint16 ||
		len(pk.Connect.Password) > math.MaxUint16 || len(pk.Connect.ProtocolName) > math.MaxUint16 {
		return ErrFieldTooLong
	}
	for i := range pk.Filters {
		if len(pk.Filters[i].Filter) > math.MaxUint16 {
			return ErrFieldTooLong
		}
	}
	if !pk.Properties.fit() || !pk.Connect.WillProperties.fit() {
		return ErrFieldTooLong
	}
	return nil
}

// fit reports whether every string and binary property fits its 16-bit
// length.
func (p *Properties) fit() bool {
	const max = math.MaxUint16
	if len(p.CorrelationData) > max || len(p.AuthenticationData) > max || len(p.ContentType) > max ||
		len(p.ResponseTopic) > max || len(p.AssignedClientID) > max || len(p.AuthenticationMethod) > max ||
		len(p.ResponseInfo) > max || len(p.ServerReference) > max || len(p.ReasonString) > max {
		return false
	}
	for i := range p.User {
		if len(p.User[i].Key) > max || len(p.User[i].Val) > max {
			return false
		}
	}
	return true
}

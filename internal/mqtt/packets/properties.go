// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package packets

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/dssio/dss/internal/mqtt/mempool"
)

const (
	PropPayloadFormat          byte = 1
	PropMessageExpiryInterval  byte = 2
	PropContentType            byte = 3
	PropResponseTopic          byte = 8
	PropCorrelationData        byte = 9
	PropSubscriptionIdentifier byte = 11
	PropSessionExpiryInterval  byte = 17
	PropAssignedClientID       byte = 18
	PropServerKeepAlive        byte = 19
	PropAuthenticationMethod   byte = 21
	PropAuthenticationData     byte = 22
	PropRequestProblemInfo     byte = 23
	PropWillDelayInterval      byte = 24
	PropRequestResponseInfo    byte = 25
	PropResponseInfo           byte = 26
	PropServerReference        byte = 28
	PropReasonString           byte = 31
	PropReceiveMaximum         byte = 33
	PropTopicAliasMaximum      byte = 34
	PropTopicAlias             byte = 35
	PropMaximumQos             byte = 36
	PropRetainAvailable        byte = 37
	PropUser                   byte = 38
	PropMaximumPacketSize      byte = 39
	PropWildcardSubAvailable   byte = 40
	PropSubIDAvailable         byte = 41
	PropSharedSubAvailable     byte = 42
)

// validPacketProperties indicates which properties are valid for which packet types.
var validPacketProperties = map[byte]map[byte]byte{
	PropPayloadFormat:          {Publish: 1, WillProperties: 1},
	PropMessageExpiryInterval:  {Publish: 1, WillProperties: 1},
	PropContentType:            {Publish: 1, WillProperties: 1},
	PropResponseTopic:          {Publish: 1, WillProperties: 1},
	PropCorrelationData:        {Publish: 1, WillProperties: 1},
	PropSubscriptionIdentifier: {Publish: 1, Subscribe: 1},
	PropSessionExpiryInterval:  {Connect: 1, Connack: 1, Disconnect: 1},
	PropAssignedClientID:       {Connack: 1},
	PropServerKeepAlive:        {Connack: 1},
	PropAuthenticationMethod:   {Connect: 1, Connack: 1, Auth: 1},
	PropAuthenticationData:     {Connect: 1, Connack: 1, Auth: 1},
	PropRequestProblemInfo:     {Connect: 1},
	PropWillDelayInterval:      {WillProperties: 1},
	PropRequestResponseInfo:    {Connect: 1},
	PropResponseInfo:           {Connack: 1},
	PropServerReference:        {Connack: 1, Disconnect: 1},
	PropReasonString:           {Connack: 1, Puback: 1, Pubrec: 1, Pubrel: 1, Pubcomp: 1, Suback: 1, Unsuback: 1, Disconnect: 1, Auth: 1},
	PropReceiveMaximum:         {Connect: 1, Connack: 1},
	PropTopicAliasMaximum:      {Connect: 1, Connack: 1},
	PropTopicAlias:             {Publish: 1},
	PropMaximumQos:             {Connack: 1},
	PropRetainAvailable:        {Connack: 1},
	PropUser:                   {Connect: 1, Connack: 1, Publish: 1, Puback: 1, Pubrec: 1, Pubrel: 1, Pubcomp: 1, Subscribe: 1, Suback: 1, Unsubscribe: 1, Unsuback: 1, Disconnect: 1, Auth: 1, WillProperties: 1},
	PropMaximumPacketSize:      {Connect: 1, Connack: 1},
	PropWildcardSubAvailable:   {Connack: 1},
	PropSubIDAvailable:         {Connack: 1},
	PropSharedSubAvailable:     {Connack: 1},
}

// UserProperty is an arbitrary key-value pair for a packet user properties array.
type UserProperty struct { // [MQTT-1.5.7-1]
	Key string `json:"k"`
	Val string `json:"v"`
}

// Properties contains all mqtt v5 properties available for a packet.
// Some properties have valid values of 0 or not-present. In this case, we opt for
// property flags to indicate the usage of property.
// Refer to mqtt v5 2.2.2.2 Property spec for more information.
type Properties struct {
	CorrelationData           []byte         `json:"cd"`
	SubscriptionIdentifier    []int          `json:"si"`
	AuthenticationData        []byte         `json:"ad"`
	User                      []UserProperty `json:"user"`
	ContentType               string         `json:"ct"`
	ResponseTopic             string         `json:"rt"`
	AssignedClientID          string         `json:"aci"`
	AuthenticationMethod      string         `json:"am"`
	ResponseInfo              string         `json:"ri"`
	ServerReference           string         `json:"sr"`
	ReasonString              string         `json:"rs"`
	MessageExpiryInterval     uint32         `json:"me"`
	SessionExpiryInterval     uint32         `json:"sei"`
	WillDelayInterval         uint32         `json:"wdi"`
	MaximumPacketSize         uint32         `json:"mps"`
	ServerKeepAlive           uint16         `json:"ska"`
	ReceiveMaximum            uint16         `json:"rm"`
	TopicAliasMaximum         uint16         `json:"tam"`
	TopicAlias                uint16         `json:"ta"`
	PayloadFormat             byte           `json:"pf"`
	PayloadFormatFlag         bool           `json:"fpf"`
	SessionExpiryIntervalFlag bool           `json:"fsei"`
	ServerKeepAliveFlag       bool           `json:"fska"`
	RequestProblemInfo        byte           `json:"rpi"`
	RequestProblemInfoFlag    bool           `json:"frpi"`
	RequestResponseInfo       byte           `json:"rri"`
	TopicAliasFlag            bool           `json:"fta"`
	MaximumQos                byte           `json:"mqos"`
	MaximumQosFlag            bool           `json:"fmqos"`
	RetainAvailable           byte           `json:"ra"`
	RetainAvailableFlag       bool           `json:"fra"`
	WildcardSubAvailable      byte           `json:"wsa"`
	WildcardSubAvailableFlag  bool           `json:"fwsa"`
	SubIDAvailable            byte           `json:"sida"`
	SubIDAvailableFlag        bool           `json:"fsida"`
	SharedSubAvailable        byte           `json:"ssa"`
	SharedSubAvailableFlag    bool           `json:"fssa"`
}

// Copy creates a new Properties struct with copies of the values.
func (p *Properties) Copy(allowTransfer bool) Properties {
	pr := Properties{
		PayloadFormat:             p.PayloadFormat, // [MQTT-3.3.2-4]
		PayloadFormatFlag:         p.PayloadFormatFlag,
		MessageExpiryInterval:     p.MessageExpiryInterval,
		ContentType:               p.ContentType,   // [MQTT-3.3.2-20]
		ResponseTopic:             p.ResponseTopic, // [MQTT-3.3.2-15]
		SessionExpiryInterval:     p.SessionExpiryInterval,
		SessionExpiryIntervalFlag: p.SessionExpiryIntervalFlag,
		AssignedClientID:          p.AssignedClientID,
		ServerKeepAlive:           p.ServerKeepAlive,
		ServerKeepAliveFlag:       p.ServerKeepAliveFlag,
		AuthenticationMethod:      p.AuthenticationMethod,
		RequestProblemInfo:        p.RequestProblemInfo,
		RequestProblemInfoFlag:    p.RequestProblemInfoFlag,
		WillDelayInterval:         p.WillDelayInterval,
		RequestResponseInfo:       p.RequestResponseInfo,
		ResponseInfo:              p.ResponseInfo,
		ServerReference:           p.ServerReference,
		ReasonString:              p.ReasonString,
		ReceiveMaximum:            p.ReceiveMaximum,
		TopicAliasMaximum:         p.TopicAliasMaximum,
		TopicAlias:                0, // NB; do not copy topic alias [MQTT-3.3.2-7] + we do not send to clients (currently) [MQTT-3.1.2-26] [MQTT-3.1.2-27]
		MaximumQos:                p.MaximumQos,
		MaximumQosFlag:            p.MaximumQosFlag,
		RetainAvailable:           p.RetainAvailable,
		RetainAvailableFlag:       p.RetainAvailableFlag,
		MaximumPacketSize:         p.MaximumPacketSize,
		WildcardSubAvailable:      p.WildcardSubAvailable,
		WildcardSubAvailableFlag:  p.WildcardSubAvailableFlag,
		SubIDAvailable:            p.SubIDAvailable,
		SubIDAvailableFlag:        p.SubIDAvailableFlag,
		SharedSubAvailable:        p.SharedSubAvailable,
		SharedSubAvailableFlag:    p.SharedSubAvailableFlag,
	}

	if allowTransfer {
		pr.TopicAlias = p.TopicAlias
		pr.TopicAliasFlag = p.TopicAliasFlag
	}

	if len(p.CorrelationData) > 0 {
		pr.CorrelationData = append([]byte{}, p.CorrelationData...) // [MQTT-3.3.2-16]
	}

	if len(p.SubscriptionIdentifier) > 0 {
		pr.SubscriptionIdentifier = append([]int{}, p.SubscriptionIdentifier...)
	}

	if len(p.AuthenticationData) > 0 {
		pr.AuthenticationData = append([]byte{}, p.AuthenticationData...)
	}

	if len(p.User) > 0 {
		pr.User = []UserProperty{}
		for _, v := range p.User {
			pr.User = append(pr.User, UserProperty{ // [MQTT-3.3.2-17]
				Key: v.Key,
				Val: v.Val,
			})
		}
	}

	return pr
}

// canEncode returns true if the property type is valid for the packet type.
func (p *Properties) canEncode(pkt byte, k byte) bool {
	encodableOnce.Do(buildEncodable)
	return int(k) < len(encodable) && int(pkt) < len(encodable[k]) && encodable[k][pkt]
}

// encodable is validPacketProperties as a table: Encode asks it about
// every property of every packet, and two map lookups each were a tenth
// of the broker's CPU time.
//
// dss: built on first use, after every init has run.
var (
	encodable     [64][128]bool
	encodableOnce sync.Once
)

func buildEncodable() {
	for k, pkts := range validPacketProperties {
		for pkt, v := range pkts {
			if int(k) < len(encodable) && int(pkt) < len(encodable[k]) {
				encodable[k][pkt] = v == 1
			}
		}
	}
}

// Encode encodes properties into a bytes buffer: their length, then the
// properties of packet type pkt that p has (encodeBody). n is the size of
// the rest of the packet, for Mods.MaxSize.
func (p *Properties) Encode(pkt byte, mods Mods, b *bytes.Buffer, n int) {
	if p == nil {
		return
	}

	buf := mempool.GetBuffer()
	defer mempool.PutBuffer(buf)
	p.encodeBody(pkt, mods, buf, n)
	encodeLength(b, int64(buf.Len()))
	b.Write(buf.Bytes()) // [MQTT-3.1.3-10]
}

// encodeBody appends the properties of packet type pkt that p has to buf,
// without their length. Each property's value is tested before the table
// of the properties pkt may carry: most packets have few.
//
// dss: written straight into buf, the user properties too (they are
// dropped again when they would make the packet too large); upstream
// built them in a buffer of their own.
func (p *Properties) encodeBody(pkt byte, mods Mods, buf *bytes.Buffer, n int) {
	if p.PayloadFormatFlag && p.canEncode(pkt, PropPayloadFormat) {
		buf.WriteByte(PropPayloadFormat)
		buf.WriteByte(p.PayloadFormat)
	}

	if p.MessageExpiryInterval > 0 && p.canEncode(pkt, PropMessageExpiryInterval) {
		buf.WriteByte(PropMessageExpiryInterval)
		buf.Write(encodeUint32(p.MessageExpiryInterval))
	}

	if p.ContentType != "" && p.canEncode(pkt, PropContentType) {
		buf.WriteByte(PropContentType)
		writeString(buf, p.ContentType) // [MQTT-3.3.2-19]
	}

	if mods.AllowResponseInfo && p.ResponseTopic != "" && //  [MQTT-3.3.2-14]
		p.canEncode(pkt, PropResponseTopic) && !HasWildcard(p.ResponseTopic) { // [MQTT-3.1.2-28]
		buf.WriteByte(PropResponseTopic)
		writeString(buf, p.ResponseTopic) // [MQTT-3.3.2-13]
	}

	if mods.AllowResponseInfo && len(p.CorrelationData) > 0 && p.canEncode(pkt, PropCorrelationData) { // [MQTT-3.1.2-28]
		buf.WriteByte(PropCorrelationData)
		writeBytes(buf, p.CorrelationData)
	}

	if len(p.SubscriptionIdentifier) > 0 && p.canEncode(pkt, PropSubscriptionIdentifier) {
		for _, v := range p.SubscriptionIdentifier {
			if v > 0 {
				buf.WriteByte(PropSubscriptionIdentifier)
				encodeLength(buf, int64(v))
			}
		}
	}

	if p.SessionExpiryIntervalFlag && p.canEncode(pkt, PropSessionExpiryInterval) { // [MQTT-3.14.2-2]
		buf.WriteByte(PropSessionExpiryInterval)
		buf.Write(encodeUint32(p.SessionExpiryInterval))
	}

	if p.AssignedClientID != "" && p.canEncode(pkt, PropAssignedClientID) {
		buf.WriteByte(PropAssignedClientID)
		writeString(buf, p.AssignedClientID)
	}

	if p.ServerKeepAliveFlag && p.canEncode(pkt, PropServerKeepAlive) {
		buf.WriteByte(PropServerKeepAlive)
		buf.Write(encodeUint16(p.ServerKeepAlive))
	}

	if p.AuthenticationMethod != "" && p.canEncode(pkt, PropAuthenticationMethod) {
		buf.WriteByte(PropAuthenticationMethod)
		writeString(buf, p.AuthenticationMethod)
	}

	if len(p.AuthenticationData) > 0 && p.canEncode(pkt, PropAuthenticationData) {
		buf.WriteByte(PropAuthenticationData)
		writeBytes(buf, p.AuthenticationData)
	}

	if p.RequestProblemInfoFlag && p.canEncode(pkt, PropRequestProblemInfo) {
		buf.WriteByte(PropRequestProblemInfo)
		buf.WriteByte(p.RequestProblemInfo)
	}

	if p.WillDelayInterval > 0 && p.canEncode(pkt, PropWillDelayInterval) {
		buf.WriteByte(PropWillDelayInterval)
		buf.Write(encodeUint32(p.WillDelayInterval))
	}

	if p.RequestResponseInfo > 0 && p.canEncode(pkt, PropRequestResponseInfo) {
		buf.WriteByte(PropRequestResponseInfo)
		buf.WriteByte(p.RequestResponseInfo)
	}

	if mods.AllowResponseInfo && len(p.ResponseInfo) > 0 && p.canEncode(pkt, PropResponseInfo) { // [MQTT-3.1.2-28]
		buf.WriteByte(PropResponseInfo)
		writeString(buf, p.ResponseInfo)
	}

	if len(p.ServerReference) > 0 && p.canEncode(pkt, PropServerReference) {
		buf.WriteByte(PropServerReference)
		writeString(buf, p.ServerReference)
	}

	// [MQTT-3.2.2-19] [MQTT-3.14.2-3] [MQTT-3.4.2-2] [MQTT-3.5.2-2]
	// [MQTT-3.6.2-2] [MQTT-3.9.2-1] [MQTT-3.11.2-1] [MQTT-3.15.2-2]
	if !mods.DisallowProblemInfo && p.ReasonString != "" && p.canEncode(pkt, PropReasonString) {
		if mods.MaxSize == 0 || uint32(n+2+len(p.ReasonString)+1) < mods.MaxSize {
			buf.WriteByte(PropReasonString)
			writeString(buf, p.ReasonString)
		}
	}

	if p.ReceiveMaximum > 0 && p.canEncode(pkt, PropReceiveMaximum) {
		buf.WriteByte(PropReceiveMaximum)
		buf.Write(encodeUint16(p.ReceiveMaximum))
	}

	if p.TopicAliasMaximum > 0 && p.canEncode(pkt, PropTopicAliasMaximum) {
		buf.WriteByte(PropTopicAliasMaximum)
		buf.Write(encodeUint16(p.TopicAliasMaximum))
	}

	if p.TopicAliasFlag && p.TopicAlias > 0 && p.canEncode(pkt, PropTopicAlias) { // [MQTT-3.3.2-8]
		buf.WriteByte(PropTopicAlias)
		buf.Write(encodeUint16(p.TopicAlias))
	}

	if p.MaximumQosFlag && p.MaximumQos < 2 && p.canEncode(pkt, PropMaximumQos) {
		buf.WriteByte(PropMaximumQos)
		buf.WriteByte(p.MaximumQos)
	}

	if p.RetainAvailableFlag && p.canEncode(pkt, PropRetainAvailable) {
		buf.WriteByte(PropRetainAvailable)
		buf.WriteByte(p.RetainAvailable)
	}

	if !mods.DisallowProblemInfo && len(p.User) > 0 && p.canEncode(pkt, PropUser) {
		mark := buf.Len()
		for _, v := range p.User {
			buf.WriteByte(PropUser)
			writeString(buf, v.Key)
			writeString(buf, v.Val)
		}
		// [MQTT-3.2.2-20] [MQTT-3.14.2-4] [MQTT-3.4.2-3] [MQTT-3.5.2-3]
		// [MQTT-3.6.2-3] [MQTT-3.9.2-2] [MQTT-3.11.2-2] [MQTT-3.15.2-3]
		if mods.MaxSize != 0 && uint32(n+buf.Len()-mark+1) >= mods.MaxSize {
			buf.Truncate(mark)
		}
	}

	if p.MaximumPacketSize > 0 && p.canEncode(pkt, PropMaximumPacketSize) {
		buf.WriteByte(PropMaximumPacketSize)
		buf.Write(encodeUint32(p.MaximumPacketSize))
	}

	if p.WildcardSubAvailableFlag && p.canEncode(pkt, PropWildcardSubAvailable) {
		buf.WriteByte(PropWildcardSubAvailable)
		buf.WriteByte(p.WildcardSubAvailable)
	}

	if p.SubIDAvailableFlag && p.canEncode(pkt, PropSubIDAvailable) {
		buf.WriteByte(PropSubIDAvailable)
		buf.WriteByte(p.SubIDAvailable)
	}

	if p.SharedSubAvailableFlag && p.canEncode(pkt, PropSharedSubAvailable) {
		buf.WriteByte(PropSharedSubAvailable)
		buf.WriteByte(p.SharedSubAvailable)
	}
}

// Decode decodes property bytes into a properties struct.
func (p *Properties) Decode(pkt byte, b *bytes.Buffer) (n int, err error) {
	if p == nil {
		return 0, nil
	}

	// dss: the length is read from the buffer's bytes rather than through
	// io.ByteReader, which made every caller's buffer escape to the heap
	// (an allocation per packet).
	var bu int
	n, bu, err = decodeLengthBytes(b.Bytes())
	if err != nil {
		return n + bu, err
	}

	if n == 0 {
		return n + bu, nil
	}

	// dss: the properties must lie within the packet, and every property
	// within their length: a length byte flipped upward made the callers
	// slice past the end of the packet (a panic), and a property that ran
	// past the length was read from the payload.
	if n > len(b.Bytes())-bu {
		return n + bu, ErrMalformedProperties
	}
	bt := b.Bytes()[bu : bu+n]
	var k byte
	var seen uint64 // the ids of the properties read (all are below 64)
	for offset := 0; offset < n; {
		k, offset, err = decodeByte(bt, offset)
		if err != nil {
			return n + bu, err
		}

		if !p.canEncode(pkt, k) {
			return n + bu, fmt.Errorf("property type %v not valid for packet type %v: %w", k, pkt, ErrProtocolViolationUnsupportedProperty)
		}

		// dss: a property is there at most once, but for User Property and
		// the Subscription Identifiers of a PUBLISH (2.2.2.2; each
		// property's section says "It is a Protocol Error to include ...
		// more than once"): the second value overwrote the first.
		if seen&(1<<k) != 0 && k != PropUser && (k != PropSubscriptionIdentifier || pkt != Publish) {
			return n + bu, fmt.Errorf("property type %v more than once: %w", k, ErrProtocolViolationDuplicateProperty)
		}
		seen |= 1 << k

		switch k {
		case PropPayloadFormat:
			p.PayloadFormat, offset, err = decodeByte(bt, offset)
			p.PayloadFormatFlag = true
		case PropMessageExpiryInterval:
			p.MessageExpiryInterval, offset, err = decodeUint32(bt, offset)
		case PropContentType:
			p.ContentType, offset, err = decodeString(bt, offset)
		case PropResponseTopic:
			p.ResponseTopic, offset, err = decodeString(bt, offset)
		case PropCorrelationData:
			p.CorrelationData, offset, err = decodeBytes(bt, offset)
		case PropSubscriptionIdentifier:
			if p.SubscriptionIdentifier == nil {
				p.SubscriptionIdentifier = []int{}
			}

			id, size, err := decodeLengthBytes(bt[offset:])
			if err != nil {
				return n + bu, ErrMalformedProperties
			}
			if id == 0 {
				return n + bu, ErrProtocolViolationSubIDZero // [MQTT-3.8.2.1.2]
			}
			p.SubscriptionIdentifier = append(p.SubscriptionIdentifier, id)
			offset += size
		case PropSessionExpiryInterval:
			p.SessionExpiryInterval, offset, err = decodeUint32(bt, offset)
			p.SessionExpiryIntervalFlag = true
		case PropAssignedClientID:
			p.AssignedClientID, offset, err = decodeString(bt, offset)
		case PropServerKeepAlive:
			p.ServerKeepAlive, offset, err = decodeUint16(bt, offset)
			p.ServerKeepAliveFlag = true
		case PropAuthenticationMethod:
			p.AuthenticationMethod, offset, err = decodeString(bt, offset)
		case PropAuthenticationData:
			p.AuthenticationData, offset, err = decodeBytes(bt, offset)
		case PropRequestProblemInfo:
			p.RequestProblemInfo, offset, err = decodeByte(bt, offset)
			p.RequestProblemInfoFlag = true
		case PropWillDelayInterval:
			p.WillDelayInterval, offset, err = decodeUint32(bt, offset)
		case PropRequestResponseInfo:
			p.RequestResponseInfo, offset, err = decodeByte(bt, offset)
		case PropResponseInfo:
			p.ResponseInfo, offset, err = decodeString(bt, offset)
		case PropServerReference:
			p.ServerReference, offset, err = decodeString(bt, offset)
		case PropReasonString:
			p.ReasonString, offset, err = decodeString(bt, offset)
		case PropReceiveMaximum:
			p.ReceiveMaximum, offset, err = decodeUint16(bt, offset)
			if err == nil && p.ReceiveMaximum == 0 {
				err = ErrProtocolViolationReceiveMaximumZero // dss: 3.1.2.11.3, 3.2.2.3.3
			}
		case PropTopicAliasMaximum:
			p.TopicAliasMaximum, offset, err = decodeUint16(bt, offset)
		case PropTopicAlias:
			p.TopicAlias, offset, err = decodeUint16(bt, offset)
			p.TopicAliasFlag = true
		case PropMaximumQos:
			p.MaximumQos, offset, err = decodeByte(bt, offset)
			p.MaximumQosFlag = true
		case PropRetainAvailable:
			p.RetainAvailable, offset, err = decodeByte(bt, offset)
			p.RetainAvailableFlag = true
		case PropUser:
			var k, v string
			k, offset, err = decodeString(bt, offset)
			if err != nil {
				return n + bu, err
			}
			v, offset, err = decodeString(bt, offset)
			if p.User == nil {
				// dss: room for this and the user properties that follow
				// it at once (an RPC envelope), not three growths.
				p.User = make([]UserProperty, 0, 1+countUserProperties(bt, offset))
			}
			p.User = append(p.User, UserProperty{Key: k, Val: v})
		case PropMaximumPacketSize:
			p.MaximumPacketSize, offset, err = decodeUint32(bt, offset)
			if err == nil && p.MaximumPacketSize == 0 {
				err = ErrProtocolViolationMaximumPacketSizeZero // dss: 3.1.2.11.4, 3.2.2.3.6
			}
		case PropWildcardSubAvailable:
			p.WildcardSubAvailable, offset, err = decodeByte(bt, offset)
			p.WildcardSubAvailableFlag = true
		case PropSubIDAvailable:
			p.SubIDAvailable, offset, err = decodeByte(bt, offset)
			p.SubIDAvailableFlag = true
		case PropSharedSubAvailable:
			p.SharedSubAvailable, offset, err = decodeByte(bt, offset)
			p.SharedSubAvailableFlag = true
		}

		if err != nil {
			return n + bu, err
		}
	}

	return n + bu, nil
}

// countUserProperties counts the well-formed user properties that follow
// each other from offset in the property bytes bt. dss: it sizes the
// slice of user properties.
func countUserProperties(bt []byte, offset int) int {
	count := 0
	for offset < len(bt) && bt[offset] == PropUser {
		offset++
		for i := 0; i < 2; i++ { // key and value
			if offset+2 > len(bt) {
				return count
			}
			offset += 2 + (int(bt[offset])<<8 | int(bt[offset+1]))
		}
		if offset > len(bt) {
			return count
		}
		count++
	}
	return count
}

// propertiesError is the error of a packet whose properties did not
// decode: a Malformed Packet (2.2.2.2), but for a property there twice
// and a Receive Maximum or Maximum Packet Size of 0, which are Protocol
// Errors. dss: every error was a Malformed Packet.
func propertiesError(err error) error {
	if isPropertyProtocolError(err) {
		return err
	}
	return fmt.Errorf("%s: %w", err, ErrMalformedProperties)
}

// isPropertyProtocolError tells whether err, from Properties.Decode, is a
// Protocol Error rather than a Malformed Packet.
func isPropertyProtocolError(err error) bool {
	return errors.Is(err, ErrProtocolViolationDuplicateProperty) ||
		errors.Is(err, ErrProtocolViolationReceiveMaximumZero) ||
		errors.Is(err, ErrProtocolViolationMaximumPacketSizeZero)
}

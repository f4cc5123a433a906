// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2023 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package packets_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/jinzhu/copier"
	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

const pkInfo = "packet type %v, %s"

var packetList = []byte{
	packets.Connect,
	packets.Connack,
	packets.Publish,
	packets.Puback,
	packets.Pubrec,
	packets.Pubrel,
	packets.Pubcomp,
	packets.Subscribe,
	packets.Suback,
	packets.Unsubscribe,
	packets.Unsuback,
	packets.Pingreq,
	packets.Pingresp,
	packets.Disconnect,
	packets.Auth,
}

var pkTable = []packettest.TPacketCase{
	packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt311),
	packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt5),
	packettest.TPacketData[packets.Connect].Get(packettest.TConnectUserPassLWT),
	packettest.TPacketData[packets.Connack].Get(packettest.TConnackAcceptedMqtt5),
	packettest.TPacketData[packets.Connack].Get(packettest.TConnackAcceptedNoSession),
	packettest.TPacketData[packets.Publish].Get(packettest.TPublishBasic),
	packettest.TPacketData[packets.Publish].Get(packettest.TPublishMqtt5),
	packettest.TPacketData[packets.Puback].Get(packettest.TPuback),
	packettest.TPacketData[packets.Pubrec].Get(packettest.TPubrec),
	packettest.TPacketData[packets.Pubrel].Get(packettest.TPubrel),
	packettest.TPacketData[packets.Pubcomp].Get(packettest.TPubcomp),
	packettest.TPacketData[packets.Subscribe].Get(packettest.TSubscribe),
	packettest.TPacketData[packets.Subscribe].Get(packettest.TSubscribeMqtt5),
	packettest.TPacketData[packets.Suback].Get(packettest.TSuback),
	packettest.TPacketData[packets.Unsubscribe].Get(packettest.TUnsubscribe),
	packettest.TPacketData[packets.Unsubscribe].Get(packettest.TUnsubscribeMqtt5),
	packettest.TPacketData[packets.Pingreq].Get(packettest.TPingreq),
	packettest.TPacketData[packets.Pingresp].Get(packettest.TPingresp),
	packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnect),
	packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnectMqtt5),
}

func TestNewPackets(t *testing.T) {
	s := packets.NewPackets()
	require.Equal(t, 0, s.Len())
}

func TestPacketsAdd(t *testing.T) {
	s := packets.NewPackets()
	s.Add("cl1", packets.Packet{})
	require.True(t, s.Has("cl1"))
}

func TestPacketsGet(t *testing.T) {
	s := packets.NewPackets()
	s.Add("cl1", packets.Packet{TopicName: "a1"})
	s.Add("cl2", packets.Packet{TopicName: "a2"})
	require.True(t, s.Has("cl1"))
	require.True(t, s.Has("cl2"))

	pk, ok := s.Get("cl1")
	require.True(t, ok)
	require.Equal(t, "a1", pk.TopicName)
}

func TestPacketsGetAll(t *testing.T) {
	s := packets.NewPackets()
	s.Add("cl1", packets.Packet{TopicName: "a1"})
	s.Add("cl2", packets.Packet{TopicName: "a2"})
	s.Add("cl3", packets.Packet{TopicName: "a3"})
	require.True(t, s.Has("cl1"))
	require.True(t, s.Has("cl2"))
	require.True(t, s.Has("cl3"))

	subs := s.GetAll()
	require.Len(t, subs, 3)
}

func TestPacketsLen(t *testing.T) {
	s := packets.NewPackets()
	s.Add("cl1", packets.Packet{TopicName: "a1"})
	s.Add("cl2", packets.Packet{TopicName: "a2"})
	require.True(t, s.Has("cl1"))
	require.True(t, s.Has("cl2"))
	require.Equal(t, 2, s.Len())
}

func TestSPacketsDelete(t *testing.T) {
	s := packets.NewPackets()
	s.Add("cl1", packets.Packet{TopicName: "a1"})
	require.True(t, s.Has("cl1"))

	s.Delete("cl1")
	_, ok := s.Get("cl1")
	require.False(t, ok)
}

func TestFormatPacketID(t *testing.T) {
	for _, id := range []uint16{0, 7, 0x100, 0xffff} {
		packet := &packets.Packet{PacketID: id}
		require.Equal(t, fmt.Sprint(id), packet.FormatID())
	}
}

func TestPacketEncode(t *testing.T) {
	for _, pkt := range packetList {
		require.Contains(t, packettest.TPacketData, pkt)
		for _, wanted := range packettest.TPacketData[pkt] {
			t.Run(fmt.Sprintf("%s %s", packets.PacketNames[pkt], wanted.Desc), func(t *testing.T) {
				if !encodeTestOK(wanted) {
					return
				}

				pk := new(packets.Packet)
				_ = copier.Copy(pk, wanted.Packet)
				require.Equal(t, pkt, pk.FixedHeader.Type, pkInfo, pkt, wanted.Desc)

				pk.Mods.AllowResponseInfo = true

				buf := new(bytes.Buffer)
				var err error
				switch pkt {
				case packets.Connect:
					err = pk.ConnectEncode(buf)
				case packets.Connack:
					err = pk.ConnackEncode(buf)
				case packets.Publish:
					err = pk.PublishEncode(buf)
				case packets.Puback:
					err = pk.PubackEncode(buf)
				case packets.Pubrec:
					err = pk.PubrecEncode(buf)
				case packets.Pubrel:
					err = pk.PubrelEncode(buf)
				case packets.Pubcomp:
					err = pk.PubcompEncode(buf)
				case packets.Subscribe:
					err = pk.SubscribeEncode(buf)
				case packets.Suback:
					err = pk.SubackEncode(buf)
				case packets.Unsubscribe:
					err = pk.UnsubscribeEncode(buf)
				case packets.Unsuback:
					err = pk.UnsubackEncode(buf)
				case packets.Pingreq:
					err = pk.PingreqEncode(buf)
				case packets.Pingresp:
					err = pk.PingrespEncode(buf)
				case packets.Disconnect:
					err = pk.DisconnectEncode(buf)
				case packets.Auth:
					err = pk.AuthEncode(buf)
				}
				if wanted.Expect != nil {
					require.Error(t, err, pkInfo, pkt, wanted.Desc)
					return
				}

				require.NoError(t, err, pkInfo, pkt, wanted.Desc)
				encoded := buf.Bytes()

				// If ActualBytes is set, compare mutated version of byte string instead (to avoid length mismatches, etc).
				if len(wanted.ActualBytes) > 0 {
					wanted.RawBytes = wanted.ActualBytes
				}
				require.EqualValues(t, wanted.RawBytes, encoded, pkInfo, pkt, wanted.Desc)
			})
		}
	}
}

func TestPacketDecode(t *testing.T) {
	for _, pkt := range packetList {
		require.Contains(t, packettest.TPacketData, pkt)
		for _, wanted := range packettest.TPacketData[pkt] {
			t.Run(fmt.Sprintf("%s %s", packets.PacketNames[pkt], wanted.Desc), func(t *testing.T) {
				if !decodeTestOK(wanted) {
					return
				}

				pk := &packets.Packet{FixedHeader: packets.FixedHeader{Type: pkt}}
				pk.Mods.AllowResponseInfo = true
				_ = pk.FixedHeader.Decode(wanted.RawBytes[0])
				if len(wanted.RawBytes) > 0 {
					pk.FixedHeader.Remaining = int(wanted.RawBytes[1])
				}

				if wanted.Packet != nil && wanted.Packet.ProtocolVersion != 0 {
					pk.ProtocolVersion = wanted.Packet.ProtocolVersion
				}

				buf := wanted.RawBytes[2:]
				var err error
				switch pkt {
				case packets.Connect:
					err = pk.ConnectDecode(buf)
				case packets.Connack:
					err = pk.ConnackDecode(buf)
				case packets.Publish:
					err = pk.PublishDecode(buf)
				case packets.Puback:
					err = pk.PubackDecode(buf)
				case packets.Pubrec:
					err = pk.PubrecDecode(buf)
				case packets.Pubrel:
					err = pk.PubrelDecode(buf)
				case packets.Pubcomp:
					err = pk.PubcompDecode(buf)
				case packets.Subscribe:
					err = pk.SubscribeDecode(buf)
				case packets.Suback:
					err = pk.SubackDecode(buf)
				case packets.Unsubscribe:
					err = pk.UnsubscribeDecode(buf)
				case packets.Unsuback:
					err = pk.UnsubackDecode(buf)
				case packets.Pingreq:
					err = pk.PingreqDecode(buf)
				case packets.Pingresp:
					err = pk.PingrespDecode(buf)
				case packets.Disconnect:
					err = pk.DisconnectDecode(buf)
				case packets.Auth:
					err = pk.AuthDecode(buf)
				}

				if wanted.FailFirst != nil {
					require.Error(t, err, pkInfo, pkt, wanted.Desc)
					require.ErrorIs(t, err, wanted.FailFirst, pkInfo, pkt, wanted.Desc)
					return
				}

				require.NoError(t, err, pkInfo, pkt, wanted.Desc)

				require.EqualValues(t, wanted.Packet.Filters, pk.Filters, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.FixedHeader.Type, pk.FixedHeader.Type, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.FixedHeader.Dup, pk.FixedHeader.Dup, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.FixedHeader.Qos, pk.FixedHeader.Qos, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.FixedHeader.Retain, pk.FixedHeader.Retain, pkInfo, pkt, wanted.Desc)

				if pkt == packets.Connect {
					// we use ProtocolVersion for controlling packet encoding, but we don't need to test
					// against it unless it's a connect packet.
					require.Equal(t, wanted.Packet.ProtocolVersion, pk.ProtocolVersion, pkInfo, pkt, wanted.Desc)
				}
				require.Equal(t, wanted.Packet.Connect.ProtocolName, pk.Connect.ProtocolName, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Clean, pk.Connect.Clean, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.ClientIdentifier, pk.Connect.ClientIdentifier, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Keepalive, pk.Connect.Keepalive, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.Connect.UsernameFlag, pk.Connect.UsernameFlag, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Username, pk.Connect.Username, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.PasswordFlag, pk.Connect.PasswordFlag, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.Password, pk.Connect.Password, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.Connect.WillFlag, pk.Connect.WillFlag, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillTopic, pk.Connect.WillTopic, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillPayload, pk.Connect.WillPayload, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillQos, pk.Connect.WillQos, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.Connect.WillRetain, pk.Connect.WillRetain, pkInfo, pkt, wanted.Desc)

				require.Equal(t, wanted.Packet.ReasonCodes, pk.ReasonCodes, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.ReasonCode, pk.ReasonCode, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.SessionPresent, pk.SessionPresent, pkInfo, pkt, wanted.Desc)
				require.Equal(t, wanted.Packet.PacketID, pk.PacketID, pkInfo, pkt, wanted.Desc)

				require.EqualValues(t, wanted.Packet.Properties, pk.Properties)
				require.EqualValues(t, wanted.Packet.Connect.WillProperties, pk.Connect.WillProperties)
			})
		}
	}
}

func TestValidate(t *testing.T) {
	for _, pkt := range packetList {
		require.Contains(t, packettest.TPacketData, pkt)
		for _, wanted := range packettest.TPacketData[pkt] {
			t.Run(fmt.Sprintf("%s %s", packets.PacketNames[pkt], wanted.Desc), func(t *testing.T) {
				if wanted.Group == "validate" || wanted.Primary {
					pk := wanted.Packet
					var err error
					switch pkt {
					case packets.Connect:
						err = pk.ConnectValidate()
					case packets.Publish:
						err = pk.PublishValidate(1024)
					case packets.Subscribe:
						err = pk.SubscribeValidate()
					case packets.Unsubscribe:
						err = pk.UnsubscribeValidate()
					case packets.Auth:
						err = pk.AuthValidate()
					}

					if wanted.Expect != nil {
						require.Error(t, err, pkInfo, pkt, wanted.Desc)
						require.ErrorIs(t, wanted.Expect, err, pkInfo, pkt, wanted.Desc)
					}
				}
			})
		}
	}
}

func TestAckValidatePubrec(t *testing.T) {
	for _, b := range []byte{
		packets.CodeSuccess.Code,
		packets.CodeNoMatchingSubscribers.Code,
		packets.ErrUnspecifiedError.Code,
		packets.ErrImplementationSpecificError.Code,
		packets.ErrNotAuthorized.Code,
		packets.ErrTopicNameInvalid.Code,
		packets.ErrPacketIdentifierInUse.Code,
		packets.ErrQuotaExceeded.Code,
		packets.ErrPayloadFormatInvalid.Code,
	} {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrec}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrec}, ReasonCode: packets.ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidatePubrel(t *testing.T) {
	for _, b := range []byte{
		packets.CodeSuccess.Code,
		packets.ErrPacketIdentifierNotFound.Code,
	} {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel}, ReasonCode: packets.ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidatePubcomp(t *testing.T) {
	for _, b := range []byte{
		packets.CodeSuccess.Code,
		packets.ErrPacketIdentifierNotFound.Code,
	} {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubcomp}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel}, ReasonCode: packets.ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidateSuback(t *testing.T) {
	for _, b := range []byte{
		packets.CodeGrantedQos0.Code,
		packets.CodeGrantedQos1.Code,
		packets.CodeGrantedQos2.Code,
		packets.ErrUnspecifiedError.Code,
		packets.ErrImplementationSpecificError.Code,
		packets.ErrNotAuthorized.Code,
		packets.ErrTopicFilterInvalid.Code,
		packets.ErrPacketIdentifierInUse.Code,
		packets.ErrQuotaExceeded.Code,
		packets.ErrSharedSubscriptionsNotSupported.Code,
		packets.ErrSubscriptionIdentifiersNotSupported.Code,
		packets.ErrWildcardSubscriptionsNotSupported.Code,
	} {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Suback}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}

	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Suback}, ReasonCode: packets.ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestAckValidateUnsuback(t *testing.T) {
	for _, b := range []byte{
		packets.CodeSuccess.Code,
		packets.CodeNoSubscriptionExisted.Code,
		packets.ErrUnspecifiedError.Code,
		packets.ErrImplementationSpecificError.Code,
		packets.ErrNotAuthorized.Code,
		packets.ErrTopicFilterInvalid.Code,
		packets.ErrPacketIdentifierInUse.Code,
	} {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsuback}, ReasonCode: b}
		require.True(t, pk.ReasonCodeValid())
	}

	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsuback}, ReasonCode: packets.ErrClientIdentifierTooLong.Code}
	require.False(t, pk.ReasonCodeValid())
}

func TestReasonCodeValidMisc(t *testing.T) {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ReasonCode: packets.CodeSuccess.Code}
	require.True(t, pk.ReasonCodeValid())
}

func TestCopy(t *testing.T) {
	for _, tt := range pkTable {
		pkc := tt.Packet.Copy(true)

		require.Equal(t, tt.Packet.FixedHeader.Qos, pkc.FixedHeader.Qos, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, false, pkc.FixedHeader.Dup, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, false, pkc.FixedHeader.Retain, pkInfo, tt.Case, tt.Desc)

		require.Equal(t, tt.Packet.TopicName, pkc.TopicName, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.ClientIdentifier, pkc.Connect.ClientIdentifier, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Keepalive, pkc.Connect.Keepalive, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.ProtocolVersion, pkc.ProtocolVersion, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.PasswordFlag, pkc.Connect.PasswordFlag, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.UsernameFlag, pkc.Connect.UsernameFlag, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillQos, pkc.Connect.WillQos, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillTopic, pkc.Connect.WillTopic, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillFlag, pkc.Connect.WillFlag, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillRetain, pkc.Connect.WillRetain, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillProperties, pkc.Connect.WillProperties, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Properties, pkc.Properties, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Clean, pkc.Connect.Clean, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.SessionPresent, pkc.SessionPresent, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.ReasonCode, pkc.ReasonCode, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.PacketID, pkc.PacketID, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Filters, pkc.Filters, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Payload, pkc.Payload, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Password, pkc.Connect.Password, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.Username, pkc.Connect.Username, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.ProtocolName, pkc.Connect.ProtocolName, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Connect.WillPayload, pkc.Connect.WillPayload, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.ReasonCodes, pkc.ReasonCodes, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Created, pkc.Created, pkInfo, tt.Case, tt.Desc)
		require.Equal(t, tt.Packet.Origin, pkc.Origin, pkInfo, tt.Case, tt.Desc)
		require.EqualValues(t, pkc.Properties, tt.Packet.Properties)

		pkcc := tt.Packet.Copy(false)
		require.Equal(t, uint16(0), pkcc.PacketID, pkInfo, tt.Case, tt.Desc)
	}
}

func TestMergeSubscription(t *testing.T) {
	sub := packets.Subscription{
		Filter:            "a/b/c",
		RetainHandling:    0,
		Qos:               0,
		RetainAsPublished: false,
		NoLocal:           false,
		Identifier:        1,
	}

	sub2 := packets.Subscription{
		Filter:            "a/b/d",
		RetainHandling:    0,
		Qos:               2,
		RetainAsPublished: false,
		NoLocal:           true,
		Identifier:        2,
	}

	expect := packets.Subscription{
		Filter:            "a/b/c",
		RetainHandling:    0,
		Qos:               2,
		RetainAsPublished: false,
		NoLocal:           true,
		Identifier:        1,
		Identifiers: map[string]int{
			"a/b/c": 1,
			"a/b/d": 2,
		},
	}
	require.Equal(t, expect, sub.Merge(sub2))
}

func encodeTestOK(wanted packettest.TPacketCase) bool {
	if wanted.RawBytes == nil {
		return false
	}
	if wanted.Group != "" && wanted.Group != "encode" {
		return false
	}
	return true
}

func decodeTestOK(wanted packettest.TPacketCase) bool {
	if wanted.Group != "" && wanted.Group != "decode" {
		return false
	}
	return true
}

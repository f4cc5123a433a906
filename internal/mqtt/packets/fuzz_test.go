// SPDX-License-Identifier: MIT

package packets_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// dss: one fuzz target per packet decoder. Each is seeded with the valid
// (and the known malformed) packets of its type in TPacketData, MQTT 5
// properties included, and with the seed corpus in testdata/fuzz. A
// decoder must return an error for what it cannot read, never panic, and
// whatever it accepts must encode again.

// decodeBody decodes body as the body of a packet of type typ with the
// header byte's flags, from a client of protocol version, as
// Client.ReadPacket does: the body is exactly the packet's remaining bytes.
func decodeBody(typ, header, version byte, body []byte) (packets.Packet, error) {
	pk := packets.Packet{ProtocolVersion: version}
	if err := pk.FixedHeader.Decode(typ<<4 | header&0x0f); err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = len(body)
	var err error
	switch typ {
	case packets.Connect:
		err = pk.ConnectDecode(body)
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Pubrec:
		err = pk.PubrecDecode(body)
	case packets.Pubrel:
		err = pk.PubrelDecode(body)
	case packets.Pubcomp:
		err = pk.PubcompDecode(body)
	case packets.Subscribe:
		err = pk.SubscribeDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Unsubscribe:
		err = pk.UnsubscribeDecode(body)
	case packets.Unsuback:
		err = pk.UnsubackDecode(body)
	case packets.Pingreq:
		err = pk.PingreqDecode(body)
	case packets.Pingresp:
		err = pk.PingrespDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	case packets.Auth:
		err = pk.AuthDecode(body)
	}
	return pk, err
}

// seedPackets adds every case of TPacketData of type typ to f, split into
// header byte, protocol version and body.
func seedPackets(f *testing.F, typ byte) {
	for _, tc := range packettest.TPacketData[typ] {
		raw := tc.RawBytes
		if len(raw) < 2 {
			continue
		}
		_, bu, err := packets.DecodeLengthBytes(raw[1:])
		if err != nil || 1+bu > len(raw) {
			continue
		}
		version := byte(4)
		if tc.Packet != nil && tc.Packet.ProtocolVersion != 0 {
			version = tc.Packet.ProtocolVersion
		}
		f.Add(raw[0], version, raw[1+bu:])
	}
}

// fuzzDecoder is the body of every decoder's fuzz target.
func fuzzDecoder(f *testing.F, typ byte) {
	seedPackets(f, typ)
	f.Fuzz(func(t *testing.T, header, version byte, body []byte) {
		version = []byte{3, 4, 5}[version%3]
		pk, err := decodeBody(typ, header, version, body)
		if err != nil {
			var code packets.Code
			if !errors.As(err, &code) {
				t.Fatalf("decode error %v is not a reason code", err)
			}
			if code.Code < packets.ErrUnspecifiedError.Code {
				t.Fatalf("decode error %v has reason code %#x, not a failure", err, code.Code)
			}
			return
		}
		// What was accepted is validated and encoded again without a panic.
		switch typ {
		case packets.Connect:
			pk.ConnectValidate()
		case packets.Publish:
			pk.PublishValidate(65535)
		case packets.Subscribe:
			pk.SubscribeValidate()
		case packets.Unsubscribe:
			pk.UnsubscribeValidate()
		case packets.Auth:
			pk.AuthValidate()
		}
		pk.ReasonCodeValid()
		var buf bytes.Buffer
		switch typ {
		case packets.Connect:
			_ = pk.ConnectEncode(&buf)
		case packets.Connack:
			_ = pk.ConnackEncode(&buf)
		case packets.Publish:
			_ = pk.PublishEncode(&buf)
		case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
			_ = pk.PubackEncode(&buf) // the four acknowledgements share one encoder
		case packets.Subscribe:
			_ = pk.SubscribeEncode(&buf)
		case packets.Suback:
			_ = pk.SubackEncode(&buf)
		case packets.Unsubscribe:
			_ = pk.UnsubscribeEncode(&buf)
		case packets.Unsuback:
			_ = pk.UnsubackEncode(&buf)
		case packets.Disconnect:
			_ = pk.DisconnectEncode(&buf)
		case packets.Auth:
			_ = pk.AuthEncode(&buf)
		}
	})
}

func FuzzConnectDecode(f *testing.F)     { fuzzDecoder(f, packets.Connect) }
func FuzzConnackDecode(f *testing.F)     { fuzzDecoder(f, packets.Connack) }
func FuzzPublishDecode(f *testing.F)     { fuzzDecoder(f, packets.Publish) }
func FuzzPubackDecode(f *testing.F)      { fuzzDecoder(f, packets.Puback) }
func FuzzPubrecDecode(f *testing.F)      { fuzzDecoder(f, packets.Pubrec) }
func FuzzPubrelDecode(f *testing.F)      { fuzzDecoder(f, packets.Pubrel) }
func FuzzPubcompDecode(f *testing.F)     { fuzzDecoder(f, packets.Pubcomp) }
func FuzzSubscribeDecode(f *testing.F)   { fuzzDecoder(f, packets.Subscribe) }
func FuzzSubackDecode(f *testing.F)      { fuzzDecoder(f, packets.Suback) }
func FuzzUnsubscribeDecode(f *testing.F) { fuzzDecoder(f, packets.Unsubscribe) }
func FuzzUnsubackDecode(f *testing.F)    { fuzzDecoder(f, packets.Unsuback) }
func FuzzDisconnectDecode(f *testing.F)  { fuzzDecoder(f, packets.Disconnect) }
func FuzzAuthDecode(f *testing.F)        { fuzzDecoder(f, packets.Auth) }

// FuzzPropertiesDecode decodes properties as every packet type that has
// them.
func FuzzPropertiesDecode(f *testing.F) {
	f.Add(packets.Publish, packets.PropertiesBytes)
	f.Add(packets.Connect, []byte{5, packets.PropUser, 0, 1, 'k', 0})
	f.Add(packets.Subscribe, []byte{2, packets.PropSubscriptionIdentifier, 7})
	f.Fuzz(func(t *testing.T, typ byte, b []byte) {
		var p packets.Properties
		n, err := p.Decode(typ, bytes.NewBuffer(b))
		if err == nil && n > len(b) {
			t.Fatalf("properties of %d bytes decoded from %d", n, len(b))
		}
		if err == nil {
			var out bytes.Buffer
			p.Encode(typ, packets.Mods{AllowResponseInfo: true}, &out, 0)
		}
	})
}

// FuzzFixedHeaderDecode decodes a fixed header and its remaining length.
func FuzzFixedHeaderDecode(f *testing.F) {
	for typ := range packettest.TPacketData {
		for _, tc := range packettest.TPacketData[typ] {
			if len(tc.RawBytes) > 0 {
				f.Add(tc.RawBytes[:min(len(tc.RawBytes), 5)])
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		var fh packets.FixedHeader
		_ = fh.Decode(b[0])
		n, bu, err := packets.DecodeLengthBytes(b[1:])
		if err == nil && (n < 0 || n > 268435455 || bu > 4) {
			t.Fatalf("remaining length %d in %d bytes", n, bu)
		}
	})
}

// The crashers an outside fuzz found: a SUBSCRIBE whose last filter has
// no options byte, and one whose property length was flipped upward.

func TestSubscribeDecodeWithoutOptionsByteIsMalformed(t *testing.T) {
	body := []byte{0, 1, 0, 0, 1, 'a'} // packet id 1, no properties, filter "a", no options
	_, err := decodeBody(packets.Subscribe, 0x02, 5, body)
	if !errors.Is(err, packets.ErrMalformedSubscriptionOptions) {
		t.Fatalf("error %v, want %v", err, packets.ErrMalformedSubscriptionOptions)
	}
}

func TestSubscribeDecodeFlippedLengthIsMalformed(t *testing.T) {
	valid := []byte{0, 1, 0, 0, 1, 'a', 1}
	if _, err := decodeBody(packets.Subscribe, 0x02, 5, valid); err != nil {
		t.Fatalf("the valid packet: %v", err)
	}
	for i := range valid {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(valid)
			b[i] ^= 1 << bit
			_, _ = decodeBody(packets.Subscribe, 0x02, 5, b) // must not panic
			_, _ = decodeBody(packets.Subscribe, 0x02, 5, b[:i])
		}
	}
	flipped := []byte{0, 1, 0x40, 0, 1, 'a', 1} // properties claim 64 bytes
	if _, err := decodeBody(packets.Subscribe, 0x02, 5, flipped); !errors.Is(err, packets.ErrMalformedProperties) {
		t.Fatalf("error %v, want %v", err, packets.ErrMalformedProperties)
	}
}

func TestPublishDecodePropertiesPastTheEndAreMalformed(t *testing.T) {
	body := []byte{0, 1, 'a', 0, 1, 0x7f, packets.PropContentType} // properties claim 127 bytes
	if _, err := decodeBody(packets.Publish, 0x02, 5, body); !errors.Is(err, packets.ErrMalformedProperties) {
		t.Fatalf("error %v, want %v", err, packets.ErrMalformedProperties)
	}
}

func TestSubscribeDecodeReservedOptionBits(t *testing.T) {
	body := []byte{0, 1, 0, 0, 1, 'a', 0x40}
	if _, err := decodeBody(packets.Subscribe, 0x02, 5, body); !errors.Is(err, packets.ErrMalformedSubscriptionOptions) {
		t.Fatalf("error %v, want %v", err, packets.ErrMalformedSubscriptionOptions)
	}
	body[len(body)-1] = 0x30 // retain handling 3
	if _, err := decodeBody(packets.Subscribe, 0x02, 5, body); !errors.Is(err, packets.ErrProtocolViolationRetainHandling) {
		t.Fatalf("error %v, want %v", err, packets.ErrProtocolViolationRetainHandling)
	}
}

// TestEveryDecoderSurvivesTruncationAndBitFlips runs every packet of
// TPacketData through its decoder cut at every length and with every bit
// flipped: the decoders return errors, never panic.
func TestEveryDecoderSurvivesTruncationAndBitFlips(t *testing.T) {
	for typ, cases := range packettest.TPacketData {
		for _, tc := range cases {
			raw := tc.RawBytes
			if len(raw) < 2 || raw[0]>>4 != typ {
				continue
			}
			_, bu, err := packets.DecodeLengthBytes(raw[1:])
			if err != nil || 1+bu > len(raw) {
				continue
			}
			body := raw[1+bu:]
			for _, version := range []byte{4, 5} {
				for i := 0; i <= len(body); i++ {
					_, _ = decodeBody(typ, raw[0], version, body[:i])
				}
				for i := range body {
					for bit := 0; bit < 8; bit++ {
						b := bytes.Clone(body)
						b[i] ^= 1 << bit
						_, _ = decodeBody(typ, raw[0], version, b)
					}
				}
			}
		}
	}
}

// TestWriteFuzzSeedCorpus writes the packets of TPacketData to
// testdata/fuzz as the seed corpus of the decoders' fuzz targets, when
// DSS_WRITE_CORPUS is set (go test -run TestWriteFuzzSeedCorpus).
func TestWriteFuzzSeedCorpus(t *testing.T) {
	if os.Getenv("DSS_WRITE_CORPUS") == "" {
		t.Skip("set DSS_WRITE_CORPUS=1 to write the seed corpus")
	}
	targets := map[byte]string{
		packets.Connect: "FuzzConnectDecode", packets.Connack: "FuzzConnackDecode", packets.Publish: "FuzzPublishDecode",
		packets.Puback: "FuzzPubackDecode", packets.Pubrec: "FuzzPubrecDecode", packets.Pubrel: "FuzzPubrelDecode",
		packets.Pubcomp: "FuzzPubcompDecode", packets.Subscribe: "FuzzSubscribeDecode", packets.Suback: "FuzzSubackDecode",
		packets.Unsubscribe: "FuzzUnsubscribeDecode", packets.Unsuback: "FuzzUnsubackDecode",
		packets.Disconnect: "FuzzDisconnectDecode", packets.Auth: "FuzzAuthDecode",
	}
	for typ, name := range targets {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tc := range packettest.TPacketData[typ] {
			raw := tc.RawBytes
			if len(raw) < 2 {
				continue
			}
			_, bu, err := packets.DecodeLengthBytes(raw[1:])
			if err != nil || 1+bu > len(raw) {
				continue
			}
			version := byte(4)
			if tc.Packet != nil && tc.Packet.ProtocolVersion != 0 {
				version = tc.Packet.ProtocolVersion
			}
			file := fmt.Sprintf("go test fuzz v1\nbyte(%#02x)\nbyte(%#02x)\n[]byte(%s)\n", raw[0], version, strconv.Quote(string(raw[1+bu:])))
			sum := sha256.Sum256([]byte(file))
			if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:8])), []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	props := map[string][]byte{"publish": append([]byte{packets.Publish}, packets.PropertiesBytes...)}
	dir := filepath.Join("testdata", "fuzz", "FuzzPropertiesDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range props {
		file := fmt.Sprintf("go test fuzz v1\nbyte(%#02x)\n[]byte(%s)\n", b[0], strconv.Quote(string(b[1:])))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestATopicLongerThanItsLengthFieldIsNeverEncoded(t *testing.T) {
	long := string(bytes.Repeat([]byte{'t'}, 65536))
	for name, pk := range map[string]packets.Packet{
		"topic":         {FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: long},
		"user property": {FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "t", ProtocolVersion: 5, Properties: packets.Properties{User: []packets.UserProperty{{Key: "k", Val: long}}}},
		"response topic": {FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "t", ProtocolVersion: 5,
			Properties: packets.Properties{ResponseTopic: long}, Mods: packets.Mods{AllowResponseInfo: true}},
		"filter": {FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1, Filters: packets.Subscriptions{{Filter: long}}},
	} {
		var buf bytes.Buffer
		var err error
		if pk.FixedHeader.Type == packets.Publish {
			err = pk.PublishEncode(&buf)
		} else {
			err = pk.SubscribeEncode(&buf)
		}
		if !errors.Is(err, packets.ErrFieldTooLong) || buf.Len() != 0 {
			t.Fatalf("%s: error %v with %d bytes written, want %v and nothing", name, err, buf.Len(), packets.ErrFieldTooLong)
		}
	}
	fits := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: long[:65535]}
	var buf bytes.Buffer
	if err := fits.PublishEncode(&buf); err != nil {
		t.Fatalf("a topic of 65,535 bytes: %v", err)
	}
}

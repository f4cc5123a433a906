package wire

import (
	"bytes"
	"testing"
)

func BenchmarkParseRequestSet(b *testing.B) {
	b.ReportAllocs()
	payload := req("SET", "bench:0042", string(bytes.Repeat([]byte("v"), 100)))
	var scratch [][]byte
	for b.Loop() {
		var err *Error
		if _, scratch, err = ParseRequest(payload, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseRequestSetNoScratch parses as the broker does today, with
// a nil scratch slice.
func BenchmarkParseRequestSetNoScratch(b *testing.B) {
	b.ReportAllocs()
	payload := req("SET", "bench:0042", string(bytes.Repeat([]byte("v"), 100)))
	for b.Loop() {
		if _, _, err := ParseRequest(payload, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRequestGet(b *testing.B) {
	b.ReportAllocs()
	payload := req("get", "bench:0042")
	var scratch [][]byte
	for b.Loop() {
		var err *Error
		if _, scratch, err = ParseRequest(payload, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

var sinkTopic string

func BenchmarkNotifyTopic(b *testing.B) {
	b.ReportAllocs()
	key := []byte("bench:0042")
	var topic string
	for b.Loop() {
		topic = NotifyTopic("client-id-0001", key)
	}
	sinkTopic = topic
}

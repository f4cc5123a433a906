package resp

import (
	"bytes"
	"testing"
)

// The request and replies of the common case: a 100-byte value.
var (
	benchValue = bytes.Repeat([]byte("v"), 100)
	benchSet   = AppendArray(nil, []byte("SET"), []byte("bench:0042"), benchValue)
	benchBulk  = AppendBulk(nil, benchValue)
)

// sink keeps results alive, so that the compiler cannot drop the work.
var sink []byte

func BenchmarkParseArraySet(b *testing.B) {
	b.SetBytes(int64(len(benchSet)))
	b.ReportAllocs()
	var dst [][]byte
	for b.Loop() {
		var err error
		if dst, err = ParseArray(benchSet, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseReplyBulk(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseReply(benchBulk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseReplyInteger(b *testing.B) {
	b.ReportAllocs()
	in := []byte(":-1\r\n")
	for b.Loop() {
		if _, err := ParseReply(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendArraySet(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	key := []byte("bench:0042")
	for b.Loop() {
		buf = AppendArray(buf[:0], []byte("SET"), key, benchValue)
	}
}

func BenchmarkAppendBulk(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf = AppendBulk(buf[:0], benchValue)
	}
}

// BenchmarkAppendBulkFresh is what the server does per GET response: a new
// buffer each time.
func BenchmarkAppendBulkFresh(b *testing.B) {
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		out = AppendBulk(make([]byte, 0, len(benchValue)+16), benchValue)
	}
	sink = out
}

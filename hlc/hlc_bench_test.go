package hlc

import (
	"testing"
	"time"
)

// sink keeps results alive, so that the compiler cannot drop the work.
var sink any

func BenchmarkClockUpdate(b *testing.B) {
	b.ReportAllocs()
	c := NewClock("bench", nil)
	remote := Timestamp{Wall: time.Now().UnixMilli(), Node: "client"}
	for b.Loop() {
		c.Update(remote)
	}
}

func BenchmarkClockUpdateParallel(b *testing.B) {
	b.ReportAllocs()
	c := NewClock("bench", nil)
	remote := Timestamp{Wall: time.Now().UnixMilli(), Node: "client"}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Update(remote)
		}
	})
}

func BenchmarkTimestampString(b *testing.B) {
	b.ReportAllocs()
	ts := Timestamp{Wall: 1696374425000, Counter: 17, Node: "node-1"}
	var s string
	for b.Loop() {
		s = ts.String()
	}
	sink = s
}

func BenchmarkTimestampAppendText(b *testing.B) {
	b.ReportAllocs()
	ts := Timestamp{Wall: 1696374425000, Counter: 17, Node: "node-1"}
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = ts.AppendText(buf[:0])
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	s := "001696374425000:00017:node-1"
	var ts Timestamp
	for b.Loop() {
		var err error
		if ts, err = Parse(s); err != nil {
			b.Fatal(err)
		}
	}
	sink = ts
}

package engine

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/wire"
)

func newBenchNode(b *testing.B) *Node {
	b.Helper()
	n := New(Config{Clock: hlc.NewClock("bench", nil)})
	n.Start()
	b.Cleanup(func() { _ = n.Close() })
	return n
}

func benchRequest(verb wire.Verb, i int) wire.Request {
	return wire.Request{Verb: verb, Key: []byte("bench:" + strconv.Itoa(i%10000)), Value: bytes.Repeat([]byte("v"), 100)}
}

// BenchmarkSubmitRoundTrip measures one request at a time from Submit to
// its Done on the delivery goroutine: the engine's share of a request's
// latency, including the hand-over between goroutines.
func BenchmarkSubmitRoundTrip(b *testing.B) {
	for _, verb := range []wire.Verb{wire.VerbSet, wire.VerbGet} {
		b.Run(verb.String(), func(b *testing.B) {
			n := newBenchNode(b)
			done := make(chan struct{}, 1)
			ts := hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "client"}
			ops := make([]Op, 10000)
			for i := range ops {
				ops[i] = Op{Request: benchRequest(verb, i), Timestamp: ts, HasTimestamp: true, Done: func(*Op) { done <- struct{}{} }}
			}
			if verb == wire.VerbGet {
				for i := range ops {
					n.Submit(context.Background(), &Op{Request: benchRequest(wire.VerbSet, i), Done: func(*Op) { done <- struct{}{} }})
					<-done
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				n.Submit(context.Background(), &ops[i%len(ops)])
				<-done
				i++
			}
		})
	}
}

// BenchmarkSubmitPipelined keeps many requests in flight, as many clients
// do: it shows the throughput of the engine lock and the batched delivery.
func BenchmarkSubmitPipelined(b *testing.B) {
	n := newBenchNode(b)
	const inflight = 256
	done := make(chan *Op, inflight)
	ts := hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "client"}
	ops := make([]Op, inflight)
	for i := range ops {
		ops[i] = Op{Request: benchRequest(wire.VerbSet, i), Timestamp: ts, HasTimestamp: true, Done: func(op *Op) { done <- op }}
	}
	b.ReportAllocs()
	sent := 0
	for ; sent < inflight && sent < b.N; sent++ {
		n.Submit(context.Background(), &ops[sent])
	}
	for received := 0; received < b.N; received++ {
		op := <-done
		if op.Result.Err != nil {
			b.Fatal(op.Result.Err)
		}
		if sent < b.N {
			n.Submit(context.Background(), op)
			sent++
		}
	}
}

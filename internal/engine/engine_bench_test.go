package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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

// BenchmarkSubmitManyKeys submits SETs and GETs on keys picked at random
// among 10,000 and 1,000,000 stored ones, 256 in flight: with a million
// keys the index and the records miss the processor's caches, so the
// cost of placing a key (the index's keyed hash) and of finding it shows
// beside the engine's lock and delivery. Run it against a build of
// another index to compare (benchstat).
func BenchmarkSubmitManyKeys(b *testing.B) {
	for _, keys := range []int{10000, 1000000} {
		n := newBenchNode(b)
		value := bytes.Repeat([]byte("v"), 100)
		key := func(i int) []byte { return []byte("bench:" + strconv.Itoa(i)) }
		ts := hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "client"}
		pipeline(b, n, keys, func(i int, op *Op) {
			op.Request = wire.Request{Verb: wire.VerbSet, Key: key(i), Value: value}
		})
		for _, verb := range []wire.Verb{wire.VerbSet, wire.VerbGet} {
			b.Run(fmt.Sprintf("%s/keys=%d", verb, keys), func(b *testing.B) {
				// The keys are encoded before the timer starts: a
				// request arrives with its key in a buffer.
				order := rand.New(rand.NewPCG(1, 2)).Perm(keys)
				encoded := make([][]byte, keys)
				for i := range encoded {
					encoded[i] = key(order[i])
				}
				b.ReportAllocs()
				b.ResetTimer()
				pipeline(b, n, b.N, func(i int, op *Op) {
					op.Request = wire.Request{Verb: verb, Key: encoded[i%keys]}
					if verb == wire.VerbSet {
						op.Request.Value = value
						op.Timestamp, op.HasTimestamp = ts, true
					}
				})
			})
		}
	}
}

// pipeline submits count requests to n, 256 in flight, each prepared by
// set, and fails on an error or, for a GET, a missing key.
func pipeline(b *testing.B, n *Node, count int, set func(i int, op *Op)) {
	b.Helper()
	const inflight = 256
	done := make(chan *Op, inflight)
	ops := make([]Op, min(inflight, count))
	sent := 0
	for ; sent < len(ops); sent++ {
		set(sent, &ops[sent])
		ops[sent].Done = func(op *Op) { done <- op }
		n.Submit(context.Background(), &ops[sent])
	}
	for received := 0; received < count; received++ {
		op := <-done
		if op.Result.Err != nil {
			b.Fatal(op.Result.Err)
		}
		if op.Request.Verb == wire.VerbGet && !op.Result.Found {
			b.Fatalf("GET %q found nothing", op.Request.Key)
		}
		if sent < count {
			doneFn := op.Done
			*op = Op{Done: doneFn}
			set(sent, op)
			n.Submit(context.Background(), op)
			sent++
		}
	}
}

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/pubsub"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

// restoredCopy returns a new FSM of node id that installed a snapshot of
// src, taken through a sink as Raft takes one.
func restoredCopy(t *testing.T, src *fsm, id string) *fsm {
	t.Helper()
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	dst := newTestFSM(t, id)
	if err := dst.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// newTestFSM returns an FSM over a started engine that no node proposes
// to: writes reach it only as committed entries.
func newTestFSM(t *testing.T, id string) *fsm {
	t.Helper()
	n := &Node{cfg: Config{NodeID: id}, log: quietLogger(), pending: map[uint64]*engine.Op{}}
	n.ps = pubsub.New(n)
	e := engine.New(engine.Config{Clock: hlc.NewClock(id, nil), Log: n})
	e.Start()
	t.Cleanup(func() { _ = e.Close() })
	n.engine = e
	n.fsm = &fsm{n: n, engine: e, dedupe: newDedupe(time.Minute.Milliseconds())}
	return n.fsm
}

// entry encodes writes as one committed log entry.
func entry(index uint64, writes ...engine.Write) *raft.Log {
	b := []byte{entryWrites}
	b = append(b, byte(len(writes)))
	for i := range writes {
		b = appendWrite(b, origin{node: "elsewhere", id: uint64(i)}, &writes[i])
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: b}
}

func setWrite(key, value string, at int64, counter uint32) engine.Write {
	return engine.Write{Command: store.Command{
		Op: store.OpSet, Key: []byte(key), Value: []byte(value), Time: at,
		Version: hlc.Timestamp{Wall: at, Counter: counter, Node: "leader"},
	}}
}

func get(t *testing.T, e *engine.Node, key string) engine.Result {
	t.Helper()
	done := make(chan engine.Result, 1)
	e.Submit(context.Background(), &engine.Op{Request: wire.Request{Verb: wire.VerbGet, Key: []byte(key)}, Done: func(op *engine.Op) { done <- op.Result }})
	return <-done
}

func TestSnapshotRestoresEveryKey(t *testing.T) {
	src := newTestFSM(t, "a")
	now := time.Now().UnixMilli()
	for i := 0; i < 2000; i++ {
		src.ApplyBatch([]*raft.Log{entry(uint64(i+1), setWrite(fmt.Sprint("key", i), fmt.Sprint("value", i), now, uint32(i+1)))})
	}
	// A leader of term 7 started its term: the snapshot keeps that, so a
	// node that installs it is ready without the entry itself.
	src.ApplyBatch([]*raft.Log{{Index: 2001, Term: 7, Type: raft.LogCommand, Data: []byte{entryTermStart}}})
	if src.startedTerm.Load() != 7 {
		t.Fatalf("started term %d after a term-start entry of term 7", src.startedTerm.Load())
	}
	dst := restoredCopy(t, src, "b")
	if got := dst.applied.Load(); got != 2001 {
		t.Fatalf("applied index after restore: %d, want 2001", got)
	}
	if got := dst.startedTerm.Load(); got != 7 {
		t.Fatalf("started term after restore: %d, want 7", got)
	}
	// The log goes on after the snapshot.
	for i := 2000; i < 2500; i++ {
		dst.ApplyBatch([]*raft.Log{entry(uint64(i+2), setWrite(fmt.Sprint("key", i), fmt.Sprint("value", i), now, uint32(i+1)))})
	}
	for i := 0; i < 2500; i++ {
		r := get(t, dst.engine, fmt.Sprint("key", i))
		if !r.Found || string(r.Value) != fmt.Sprint("value", i) {
			t.Fatalf("key%d after restore: %+v", i, r)
		}
	}
}

func TestSnapshotAtEverySizeThenTheLog(t *testing.T) {
	for restored := 1; restored < 400; restored += 13 {
		src := newTestFSM(t, "a")
		now := time.Now().UnixMilli()
		for i := 0; i < restored; i++ {
			src.ApplyBatch([]*raft.Log{entry(uint64(i+1), setWrite(fmt.Sprint("key", i), fmt.Sprint("value", i), now, uint32(i+1)))})
		}
		dst := restoredCopy(t, src, "b")
		for i := restored; i < 400; i++ {
			dst.ApplyBatch([]*raft.Log{entry(uint64(i+1), setWrite(fmt.Sprint("key", i), fmt.Sprint("value", i), now, uint32(i+1)))})
		}
		for i := 0; i < 400; i++ {
			r := get(t, dst.engine, fmt.Sprint("key", i))
			if !r.Found || string(r.Value) != fmt.Sprint("value", i) {
				t.Fatalf("restored %d: key%d: %+v", restored, i, r)
			}
		}
	}
}

// A request waiting for this node to apply an entry is answered either
// way: by the entry once it is applied, or as abandoned when the node
// closes first, and a request that starts waiting after that is
// abandoned at once rather than left waiting for an entry that will
// never come.
func TestWaitersRunOnApplyOrAreAbandonedOnClose(t *testing.T) {
	f := newTestFSM(t, "n1")
	var ran, abandoned []uint64
	wait := func(index uint64) {
		f.afterApplied(index, func() { ran = append(ran, index) }, func() { abandoned = append(abandoned, index) })
	}
	wait(1)
	wait(2)
	wait(3)
	f.setApplied(2)
	if fmt.Sprint(ran) != "[1 2]" || len(abandoned) != 0 {
		t.Fatalf("after applying 2: ran %v, abandoned %v", ran, abandoned)
	}
	wait(2) // applied already: runs now
	f.abandonWaiters()
	wait(4)
	if fmt.Sprint(ran) != "[1 2 2]" || fmt.Sprint(abandoned) != "[3 4]" {
		t.Fatalf("after close: ran %v, abandoned %v", ran, abandoned)
	}
}

package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/dssio/dss/internal/bincode"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/store"
)

func engineOutcome(b byte) store.Outcome { return store.Outcome(b) }

// fsm applies the committed entries of the Raft log to the node's engine,
// in log order, on Raft's FSM goroutine.
type fsm struct {
	n      *Node
	engine *engine.Node
	dedupe *dedupe // FSM goroutine only

	// applied is the index of the last entry applied.
	applied atomic.Uint64
	// applying is the index of the entry being applied, or of the last:
	// a write answered as it is applied is in this entry or an earlier
	// one, while applied may not have reached it yet.
	applying atomic.Uint64
	// startedTerm is the term of the last term-start entry applied: the
	// leader of that term serves.
	startedTerm atomic.Uint64

	mu      sync.Mutex
	waiters []waiter // guarded by mu; in no particular order
	stopped bool     // guarded by mu; no more waiters: Raft stopped

	decoded []decodedWrite      // FSM goroutine only
	writes  []engine.Write      // FSM goroutine only
	seen    map[string]struct{} // FSM goroutine only; the dedupe keys of a batch
}

// waiter runs fn once the entry at index is applied, or abandon if the
// node closes first.
type waiter struct {
	index   uint64
	fn      func()
	abandon func()
}

var _ raft.BatchingFSM = (*fsm)(nil)

func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	for _, l := range logs {
		f.applying.Store(l.Index)
		if l.Type == raft.LogCommand && len(l.Data) > 0 && l.Data[0] == entryTermStart {
			f.startedTerm.Store(l.Term)
		}
		if l.Type == raft.LogCommand && len(l.Data) > 0 && l.Data[0] == entryWrites {
			if err := f.applyWrites(l.Data[1:]); err != nil {
				// Every node reads the same bytes: a node that cannot
				// decode an entry must not go on with a state the others
				// do not have.
				panic(fmt.Sprintf("cluster: entry %d: %v", l.Index, err))
			}
		}
		if l.Type == raft.LogCommand && len(l.Data) > 0 && l.Data[0] == entryPubSub {
			if err := f.n.ps.Apply(l.Data[1:]); err != nil {
				panic(fmt.Sprintf("cluster: entry %d: %v", l.Index, err))
			}
		}
	}
	f.setApplied(logs[len(logs)-1].Index)
	return make([]any, len(logs))
}

// applyWrites applies one batch of writes.
func (f *fsm) applyWrites(data []byte) error {
	decoded, err := decodeWrites(data, f.decoded[:0])
	if err != nil {
		return err
	}
	f.decoded = decoded
	writes := f.writes[:0]
	start := 0
	if f.seen == nil {
		f.seen = make(map[string]struct{})
	}
	seen := f.seen
	defer clear(seen)
	for i := range decoded {
		dw := &decoded[i]
		if dw.dedupe != "" {
			if _, again := seen[dw.dedupe]; again {
				// The same request twice in one batch: apply what came
				// before it, so that the table knows the first result.
				f.commit(decoded[start:i], writes)
				writes, start = writes[:0], i
				clear(seen)
			}
			seen[dw.dedupe] = struct{}{}
		}
		w := dw.write
		w.Op = f.n.takeOp(dw.origin)
		if dw.dedupe != "" {
			if r, ok := f.dedupe.get(dw.dedupe); ok {
				w.Duplicate, w.Result = true, r
			}
		}
		writes = append(writes, w)
	}
	f.commit(decoded[start:], writes)
	f.writes = writes[:0]
	return nil
}

// commit applies writes (made of decoded) and remembers their results.
func (f *fsm) commit(decoded []decodedWrite, writes []engine.Write) {
	if len(writes) == 0 {
		return
	}
	f.engine.ApplyCommitted(writes)
	var now int64
	for i := range writes {
		w := &writes[i]
		now = max(now, w.Command.Time)
		if key := decoded[i].dedupe; key != "" && !w.Duplicate {
			f.dedupe.add(key, w.Command.Time, w.Result)
		}
		*w = engine.Write{}
	}
	f.dedupe.prune(now)
}

// setApplied records the applied index and runs the waiters it releases.
func (f *fsm) setApplied(index uint64) {
	f.applied.Store(index)
	f.mu.Lock()
	var due []func()
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.index <= index {
			due = append(due, w.fn)
		} else {
			kept = append(kept, w)
		}
	}
	clear(f.waiters[len(kept):])
	f.waiters = kept
	f.mu.Unlock()
	for _, fn := range due {
		fn()
	}
}

// afterApplied runs fn once the entry at index is applied: now, if it is.
// If the node closes first, abandon runs instead (from abandonWaiters).
// Neither may block: fn may run on the FSM goroutine.
func (f *fsm) afterApplied(index uint64, fn, abandon func()) {
	if f.applied.Load() >= index {
		fn()
		return
	}
	f.mu.Lock()
	if f.applied.Load() >= index {
		f.mu.Unlock()
		fn()
		return
	}
	if f.stopped {
		f.mu.Unlock()
		abandon()
		return
	}
	f.waiters = append(f.waiters, waiter{index: index, fn: fn, abandon: abandon})
	f.mu.Unlock()
}

// abandonWaiters runs the abandon function of every waiter, once Raft
// has stopped: their entries will not be applied by this node.
func (f *fsm) abandonWaiters() {
	f.mu.Lock()
	ws := f.waiters
	f.waiters, f.stopped = nil, true
	f.mu.Unlock()
	for _, w := range ws {
		w.abandon()
	}
}

// snapshotMagic starts every Raft snapshot of dss.
const snapshotMagic = "dss-raft-snapshot-1\n"

// Snapshot copies the state at the last applied entry. It runs on the FSM
// goroutine, so nothing is applied while it copies (reads go on).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	s := &fsmSnapshot{applied: f.applied.Load(), startedTerm: f.startedTerm.Load(), state: f.engine.CopyState()}
	s.dedupe = f.dedupe.appendTo(nil)
	s.pubsub = f.n.ps.AppendSnapshot(nil)
	return s, nil
}

// Restore replaces the state with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<20)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return errors.New("cluster: not a dss snapshot")
	}
	size, err := binary.ReadUvarint(br)
	if err != nil || size > 1<<34 {
		return errors.New("cluster: damaged snapshot header")
	}
	meta := make([]byte, size)
	if _, err := io.ReadFull(br, meta); err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	d := newDecoder(meta)
	applied := d.Uvarint()
	lastTime := d.Varint()
	table := decodeDedupe(&d, f.dedupe.window)
	var startedTerm uint64
	if d.Len() > 0 {
		// Written after the table since the term-start's term was kept.
		startedTerm = d.Uvarint()
	}
	var broker []byte
	if d.Len() > 0 {
		// The broker's replicated metadata, since it spans the cluster.
		broker = d.Bytes()
	}
	if d.Err() != nil {
		return errors.New("cluster: damaged snapshot header")
	}
	m := store.NewKeyed(f.n.cfg.HashKey())
	if err := journal.ReadSnapshot(br, m); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := f.n.ps.Restore(broker); err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	f.engine.Restore(m, lastTime)
	f.dedupe = table
	f.startedTerm.Store(startedTerm)
	f.applying.Store(applied)
	f.setApplied(applied)
	f.n.log.Info("state restored from a Raft snapshot", "keys", m.Len(), "applied_index", applied)
	return nil
}

type fsmSnapshot struct {
	applied     uint64
	startedTerm uint64
	state       engine.State
	dedupe      []byte
	pubsub      []byte
}

// Persist writes the snapshot: a header with the applied index, the
// latest command time, the de-duplication table, the term of the last
// term-start entry applied and the broker's metadata, then the keys in the
// format of the single node's snapshot files.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	meta := binary.AppendUvarint(nil, s.applied)
	meta = binary.AppendVarint(meta, s.state.LastTime)
	meta = append(meta, s.dedupe...)
	meta = binary.AppendUvarint(meta, s.startedTerm)
	meta = bincode.AppendBytes(meta, s.pubsub)
	head := append([]byte(snapshotMagic), binary.AppendUvarint(nil, uint64(len(meta)))...)
	head = append(head, meta...)
	_, err := sink.Write(head)
	if err == nil {
		err = journal.WriteSnapshot(sink, s.state.Seq, s.state.MaxVersion, s.state.Entries)
	}
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

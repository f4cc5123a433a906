package cluster

import (
	"encoding/binary"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/bincode"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// dedupe remembers the results of the writes applied within the last
// window of command time, by client id and correlation data, so that a
// request a client sends again after a failover is answered with the
// first result instead of being applied twice. It is part of the
// replicated state: every node builds the same table from the same log,
// and forgets entries by the commands' time, never its own clock. Only
// the FSM goroutine uses it.
type dedupe struct {
	window int64 // milliseconds
	byKey  map[string]dedupeEntry
	order  []dedupeRef // in apply order, so in order of time
	head   int
}

// dedupeEntry is what a write's answer needs, and no more of an
// engine.Result (200 bytes, most of them for reads): the table holds
// every write of the window, some 10^5-10^6 of them.
type dedupeEntry struct {
	time    int64
	version hlc.Timestamp // valid when not zero
	err     *wire.Error
	outcome store.Outcome
}

// result is the answer the entry's write was given.
func (e *dedupeEntry) result() engine.Result {
	return engine.Result{Err: e.err, Outcome: e.outcome, Version: e.version, HasVersion: !e.version.IsZero()}
}

type dedupeRef struct {
	key  string
	time int64
}

func newDedupe(windowMillis int64) *dedupe {
	return &dedupe{window: windowMillis, byKey: make(map[string]dedupeEntry)}
}

func (d *dedupe) get(key string) (engine.Result, bool) {
	e, ok := d.byKey[key]
	if !ok {
		return engine.Result{}, false
	}
	return e.result(), true
}

// add remembers the answer r of a write; only its error, outcome and
// version are kept.
func (d *dedupe) add(key string, time int64, r engine.Result) {
	e := dedupeEntry{time: time, err: r.Err, outcome: r.Outcome}
	if r.HasVersion {
		e.version = r.Version
	}
	d.byKey[key] = e
	d.order = append(d.order, dedupeRef{key: key, time: time})
}

// prune forgets the entries older than the window before now.
func (d *dedupe) prune(now int64) {
	limit := now - d.window
	for d.head < len(d.order) && d.order[d.head].time < limit {
		ref := d.order[d.head]
		if e, ok := d.byKey[ref.key]; ok && e.time == ref.time {
			delete(d.byKey, ref.key)
		}
		d.order[d.head] = dedupeRef{}
		d.head++
	}
	if d.head > 1024 && d.head > len(d.order)/2 {
		d.order = append(d.order[:0:0], d.order[d.head:]...)
		d.head = 0
	}
}

func (d *dedupe) len() int { return len(d.byKey) }

// appendTo encodes the live entries, oldest first.
func (d *dedupe) appendTo(b []byte) []byte {
	var live []dedupeRef
	for _, ref := range d.order[d.head:] {
		if e, ok := d.byKey[ref.key]; ok && e.time == ref.time {
			live = append(live, ref)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(live)))
	for _, ref := range live {
		e := d.byKey[ref.key]
		b = bincode.AppendString(b, ref.key)
		b = binary.AppendVarint(b, e.time)
		b = append(b, byte(e.outcome))
		var errText string
		if e.err != nil {
			errText = e.err.Text()
		}
		b = bincode.AppendString(b, errText)
		b = bincode.AppendStamp(b, e.version)
	}
	return b
}

// decodeDedupe reads what appendTo wrote.
func decodeDedupe(d *decoder, windowMillis int64) *dedupe {
	t := newDedupe(windowMillis)
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		key := d.Str()
		time := d.Varint()
		var r engine.Result
		r.Outcome = engineOutcome(d.Byte())
		if text := d.Str(); text != "" {
			if r.Err = wire.ErrorByText(text); r.Err == nil {
				r.Err = wire.ErrUnavailable
			}
		}
		r.Version = d.Stamp()
		r.HasVersion = !r.Version.IsZero()
		t.add(key, time, r)
	}
	return t
}

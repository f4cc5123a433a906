package client

import "github.com/dssio/dss/hlc"

// keySync is what a Watch knows about one of its keys, to merge the
// notifications with the key's state read on (re)registration.
//
// While a resync is under way (syncing > 0) notifications are held back:
// the server may send a change before or after the GET that reads the
// state, so a change can arrive on either side of that state. When the
// state arrives it is delivered, then the held notifications that are newer
// than it. From then on, notifications at or below the last delivered
// version are repeats and are dropped.
type keySync struct {
	syncing int     // resyncs under way
	held    []Event // notifications that arrived during a resync
	// last is the version of the last delivered event; zero when unknown
	// (nothing delivered yet, or the key was missing).
	last hlc.Timestamp
	// seq numbers resyncs; emitted is the newest resync whose state was
	// delivered, so that a resync that finishes after a newer one does
	// not report an older state.
	seq, emitted uint64
}

// newer reports whether an event with version v is news after the last
// delivered one.
func (k *keySync) newer(v hlc.Timestamp) bool {
	return k.last.IsZero() || v.IsZero() || v.After(k.last)
}

// notify delivers a notified change of one of w's keys.
func (w *Watch) notify(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pattern != "" {
		w.enqueueLocked(e) // a pattern watch reports every change it hears
		return
	}
	k := w.keyed[e.Key]
	switch {
	case k == nil:
	case k.syncing > 0:
		k.held = append(k.held, e)
	case k.newer(e.Version):
		k.last = e.Version
		w.enqueueLocked(e)
	}
}

// beginSync holds back the notifications of key until the matching
// endSync or abortSync, and returns the resync's number.
func (w *Watch) beginSync(key string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keyed[key]
	k.syncing++
	k.seq++
	return k.seq
}

// endSync delivers the state read by resync seq, then the notifications
// held back that are newer than it.
func (w *Watch) endSync(seq uint64, state Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keyed[state.Key]
	if seq > k.emitted {
		k.emitted = seq
		// The state may come from another server, or from one that
		// lost its data: it replaces the old baseline, even if older.
		k.last = state.Version
		w.enqueueLocked(state)
	}
	w.releaseLocked(k)
}

// abortSync ends a resync that could not read the state; the held
// notifications are delivered as they are.
func (w *Watch) abortSync(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.releaseLocked(w.keyed[key])
}

func (w *Watch) releaseLocked(k *keySync) {
	k.syncing--
	if k.syncing > 0 {
		return
	}
	held := k.held
	k.held = nil
	for _, e := range held {
		if k.newer(e.Version) {
			k.last = e.Version
			w.enqueueLocked(e)
		}
	}
}

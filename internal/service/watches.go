package service

import (
	"slices"

	"github.com/dssio/dss/internal/wire"
)

// Watches is the table of a front end's KEYNOTIFY registrations: for keys,
// and for patterns of keys (KEYNOTIFY pattern PATTERN, dss's extension),
// by requester R (a connection for dss serve, a client id for dss
// attach), each with a value V (for dss attach, the end of its lease).
//
// It decides what both front ends decide alike: one registration per
// requester and key or pattern, the bound of registrations per
// requester, whether the notification topic of a key can be carried,
// and the recipients of a change, each once however many of its
// registrations match. Who may register, when a registration ends and
// how a notification travels are the front end's.
//
// It is not safe for concurrent use: the front end guards it with its
// lock.
type Watches[R comparable, V any] struct {
	// MaxPer bounds the registrations of one requester, for keys and
	// patterns together; 0: no bound.
	MaxPer int

	byKey map[string]map[R]V
	byReq map[R]map[string]struct{}
	pats  patterns[R, V]
}

// NewWatches returns an empty table.
func NewWatches[R comparable, V any]() *Watches[R, V] {
	return &Watches[R, V]{
		byKey: make(map[string]map[R]V),
		byReq: make(map[R]map[string]struct{}),
		pats:  newPatterns[R, V](),
	}
}

// Lookup returns the value of r's registration for key (a pattern when
// pattern is set), and whether r has one.
func (w *Watches[R, V]) Lookup(r R, key string, pattern bool) (V, bool) {
	if pattern {
		return w.pats.lookup(r, key)
	}
	v, ok := w.byKey[key][r]
	return v, ok
}

// Add registers r for key (a pattern when pattern is set) with v, or, when
// r has that registration already, sets its value to v. idLen is the
// length of r's client id, which names the notification topic with the
// key. It reports whether the registration is new, or returns the error
// that refuses it: the quota has been exceeded (MaxPer), or the key is too
// long for a notification topic with that client id (a pattern's keys are
// checked as they change instead).
func (w *Watches[R, V]) Add(r R, idLen int, key string, pattern bool, v V) (added bool, err *wire.Error) {
	if pattern {
		if _, ok := w.pats.lookup(r, key); ok {
			w.pats.put(r, key, v)
			return false, nil
		}
		if w.full(r) {
			return false, wire.ErrQuotaExceeded
		}
		w.pats.put(r, key, v)
		return true, nil
	}
	watchers := w.byKey[key]
	if _, ok := watchers[r]; ok {
		watchers[r] = v
		return false, nil
	}
	if w.full(r) {
		return false, wire.ErrQuotaExceeded
	}
	if wire.NotifyTopicLen(idLen, len(key)) > wire.MaxTopicLen {
		// The client id and the key make a topic MQTT cannot carry:
		// refused here, as every notification would be.
		return false, wire.ErrKeyTooLong
	}
	if watchers == nil {
		watchers = make(map[R]V)
		w.byKey[key] = watchers
	}
	watchers[r] = v
	keys := w.byReq[r]
	if keys == nil {
		keys = make(map[string]struct{})
		w.byReq[r] = keys
	}
	keys[key] = struct{}{}
	return true, nil
}

// full reports whether r has as many registrations, for keys and
// patterns together, as it may.
func (w *Watches[R, V]) full(r R) bool {
	return w.MaxPer > 0 && len(w.byReq[r])+w.pats.count(r) >= w.MaxPer
}

// Remove unregisters r for key (a pattern when pattern is set), and
// returns the value of the registration it had, if any.
func (w *Watches[R, V]) Remove(r R, key string, pattern bool) (V, bool) {
	if pattern {
		return w.pats.remove(r, key)
	}
	watchers := w.byKey[key]
	v, ok := watchers[r]
	if !ok {
		return v, false
	}
	delete(watchers, r)
	if len(watchers) == 0 {
		delete(w.byKey, key)
	}
	delete(w.byReq[r], key)
	if len(w.byReq[r]) == 0 {
		delete(w.byReq, r)
	}
	return v, true
}

// Drop removes every registration of r, and returns how many it had.
func (w *Watches[R, V]) Drop(r R) int {
	n := 0
	for key := range w.byReq[r] {
		if _, ok := w.Remove(r, key, false); ok {
			n++
		}
	}
	for _, pattern := range w.pats.of(r) {
		if _, ok := w.pats.remove(r, pattern); ok {
			n++
		}
	}
	return n
}

// KeysOf returns the keys r is registered for (not its patterns).
func (w *Watches[R, V]) KeysOf(r R) []string {
	keys := make([]string, 0, len(w.byReq[r]))
	for k := range w.byReq[r] {
		keys = append(keys, k)
	}
	return keys
}

// Keys returns every key that has a registration (not the patterns).
func (w *Watches[R, V]) Keys() []string {
	keys := make([]string, 0, len(w.byKey))
	for k := range w.byKey {
		keys = append(keys, k)
	}
	return keys
}

// HasPatterns reports whether a registration for a pattern exists: then
// any key may have a recipient.
func (w *Watches[R, V]) HasPatterns() bool { return len(w.pats.byText) > 0 }

// Watching reports whether a change of key may have a recipient: a
// registration for the key, or for any pattern. It allocates nothing.
func (w *Watches[R, V]) Watching(key string) bool {
	return len(w.byKey[key]) > 0 || len(w.pats.byText) > 0
}

// Recipients returns the requesters to tell of a change of key: those
// registered for the key, and those registered for a pattern it matches,
// each once however many of its registrations match. keep, when not nil,
// says whether a registration counts (its value, and whether it is for a
// pattern): a requester whose first matching registration does not count
// is still told through another that does. The result is nil when there
// is none, and nothing is allocated then.
//
// It costs about the same whether the requesters registered for the key
// or for patterns: the patterns that match are found first, the result
// is allocated once at its size, and requesters are checked for
// duplicates only when more than one registration matched, by a look
// through the result while it is short.
func (w *Watches[R, V]) Recipients(key string, keep func(r R, key string, v V, byPattern bool) bool) []R {
	watchers := w.byKey[key]
	var buf [4]*patternGroup[R, V]
	groups := buf[:0]
	if len(w.pats.byText) > 0 {
		groups = w.pats.match(key, groups)
	}
	total := len(watchers)
	for _, g := range groups {
		total += len(g.reqs)
	}
	if total == 0 {
		return nil
	}
	out := make([]R, 0, total)
	for r, v := range watchers {
		if keep == nil || keep(r, key, v, false) {
			out = append(out, r)
		}
	}
	// A requester is in out at most once as long as a single
	// registration (the key's watchers, or one pattern) contributes.
	sole := len(groups) == 0 || len(groups) == 1 && len(watchers) == 0
	var seen map[R]struct{}
	for _, g := range groups {
		for r, v := range g.reqs {
			if !sole {
				if seen == nil && len(out) > dedupeScan {
					seen = make(map[R]struct{}, total)
					for _, o := range out {
						seen[o] = struct{}{}
					}
				}
				if seen != nil {
					if _, dup := seen[r]; dup {
						continue
					}
				} else if slices.Contains(out, r) {
					continue
				}
			}
			if keep != nil && !keep(r, key, v, true) {
				continue
			}
			if seen != nil {
				seen[r] = struct{}{}
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// dedupeScan is the length up to which Recipients looks for a duplicate
// requester by a scan of its result rather than a set.
const dedupeScan = 16

// Each calls fn for every registration: its requester, key or pattern,
// and value. fn must not change the table; collect what to remove.
func (w *Watches[R, V]) Each(fn func(r R, key string, pattern bool, v V)) {
	for key, watchers := range w.byKey {
		for r, v := range watchers {
			fn(r, key, false, v)
		}
	}
	for text, g := range w.pats.byText {
		for r, v := range g.reqs {
			fn(r, text, true, v)
		}
	}
}

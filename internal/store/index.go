package store

import (
	"hash/maphash"
	"iter"
	"strings"
)

// index finds a key's record. It maps a 64-bit hash of the key to the
// record's place in the arena (16 bytes a key, and nothing for the garbage
// collector to scan); the rare key whose hash another key already holds
// goes to a small map by the key itself.
type index struct {
	seed     maphash.Seed
	byHash   map[uint64]ref
	overflow map[string]ref
}

func newIndex() index {
	return index{seed: maphash.MakeSeed(), byHash: make(map[uint64]ref)}
}

func (x *index) len() int { return len(x.byHash) + len(x.overflow) }

// get returns where the record of key is.
func (x *index) get(a *arena, key []byte) (ref, bool) {
	if r, ok := x.byHash[maphash.Bytes(x.seed, key)]; ok && a.at(r).key() == string(key) {
		return r, true
	}
	if x.overflow != nil {
		r, ok := x.overflow[string(key)]
		return r, ok
	}
	return 0, false
}

// put makes r the place of the record of key.
func (x *index) put(a *arena, key string, r ref) {
	if x.overflow != nil {
		if _, ok := x.overflow[key]; ok {
			x.overflow[key] = r
			return
		}
	}
	h := maphash.String(x.seed, key)
	if old, ok := x.byHash[h]; !ok || a.at(old).key() == key {
		x.byHash[h] = r
		return
	}
	if x.overflow == nil {
		x.overflow = make(map[string]ref)
	}
	x.overflow[strings.Clone(key)] = r // key may alias a slab
}

// delete forgets key.
func (x *index) delete(a *arena, key string) {
	h := maphash.String(x.seed, key)
	if r, ok := x.byHash[h]; ok && a.at(r).key() == key {
		delete(x.byHash, h)
		return
	}
	delete(x.overflow, key)
	if len(x.overflow) == 0 {
		x.overflow = nil
	}
}

// all yields where every record is.
func (x *index) all() iter.Seq[ref] {
	return func(yield func(ref) bool) {
		for _, r := range x.byHash {
			if !yield(r) {
				return
			}
		}
		for _, r := range x.overflow {
			if !yield(r) {
				return
			}
		}
	}
}

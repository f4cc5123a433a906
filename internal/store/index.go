package store

import (
	"hash/maphash"
	"iter"
	"unsafe"
)

// index finds a key's record. It maps a 64-bit hash of the key to the
// record (16 bytes a key, where a map from key strings to records takes
// about 80); the rare key whose hash another key already holds goes to a
// small map by the key itself.
type index struct {
	seed     maphash.Seed
	byHash   map[uint64]unsafe.Pointer
	overflow map[string]unsafe.Pointer // keys alias their records
}

func newIndex() index {
	return index{seed: maphash.MakeSeed(), byHash: make(map[uint64]unsafe.Pointer)}
}

func (x *index) len() int { return len(x.byHash) + len(x.overflow) }

func (x *index) hash(key string) uint64 { return maphash.String(x.seed, key) }

// get returns the record of key.
func (x *index) get(key []byte) (record, bool) {
	if p, ok := x.byHash[maphash.Bytes(x.seed, key)]; ok {
		if r := recordAt(p); r.key() == string(key) {
			return r, true
		}
	}
	if x.overflow != nil {
		if p, ok := x.overflow[string(key)]; ok {
			return recordAt(p), true
		}
	}
	return "", false
}

// put makes r the record of its key.
func (x *index) put(r record) {
	key := r.key()
	if x.overflow != nil {
		if _, ok := x.overflow[key]; ok {
			x.overflow[key] = r.pointer() // the map takes the new key string
			return
		}
	}
	h := x.hash(key)
	if p, ok := x.byHash[h]; !ok || recordAt(p).key() == key {
		x.byHash[h] = r.pointer()
		return
	}
	if x.overflow == nil {
		x.overflow = make(map[string]unsafe.Pointer)
	}
	x.overflow[key] = r.pointer()
}

// delete forgets key.
func (x *index) delete(key string) {
	h := x.hash(key)
	if p, ok := x.byHash[h]; ok && recordAt(p).key() == key {
		delete(x.byHash, h)
		return
	}
	delete(x.overflow, key)
	if len(x.overflow) == 0 {
		x.overflow = nil
	}
}

// all yields every record.
func (x *index) all() iter.Seq[record] {
	return func(yield func(record) bool) {
		for _, p := range x.byHash {
			if !yield(recordAt(p)) {
				return
			}
		}
		for _, p := range x.overflow {
			if !yield(recordAt(p)) {
				return
			}
		}
	}
}

package store

import (
	"iter"
	"strings"
)

// index finds a key's record. It maps a 64-bit keyed hash of the key to the
// record's place in the arena (nothing for the garbage collector to scan);
// the rare key whose hash another key already holds goes to a small map by
// the key itself.
//
// The hashes live in a table of its own rather than a Go map, because with
// millions of keys every lookup misses the processor's caches and the
// number of misses is what a lookup costs: a Go map reads a control word
// and then a slot of a group (136 bytes, over three cache lines), behind a
// table header, while here a lookup reads one 16-byte slot, whose cache
// line usually holds the slots probed after it too. With ten million keys
// that is a third of a GET's extra cost against ten thousand keys.
//
// The table is split into segments of 4,096 slots (extendible hashing): a
// directory indexed by the top bits of the hash points to the segments,
// several entries to one segment that has not split as often. A segment
// that is three quarters full splits in two by the next bit of the hash,
// which rehashes 3,072 slots, so that no insertion pays for the whole
// table the way doubling a single table would. Within a segment, slots are
// probed linearly from the one the hash's low bits pick, and a deletion
// shifts back the slots after it that belong earlier (no tombstones, so
// lookups stay short however many keys come and go). Memory is not given
// back when keys are deleted, as with a Go map.
type index struct {
	h     keyedHash
	dir   []*segment // by the hash's top depth bits
	depth uint       // bits of the hash that index dir
	n     int        // keys in segments
	// overflow holds the keys whose hash another key holds.
	overflow map[string]ref
}

const (
	segmentBits  = 12
	segmentSlots = 1 << segmentBits
	segmentMask  = segmentSlots - 1
	// segmentFull is the number of keys from which a segment splits.
	segmentFull = segmentSlots * 3 / 4
)

// A segment holds up to segmentFull keys in open-addressed slots.
type segment struct {
	slots *[segmentSlots]slot
	depth uint // the top bits of the hash all its keys share
	n     int
}

// A slot holds a key's hash (0 for a free slot: hashes have their lowest
// bit set) and the place of its record.
type slot struct {
	hash uint64
	at   ref
}

func newSegment(depth uint) *segment {
	return &segment{slots: new([segmentSlots]slot), depth: depth}
}

func newIndex(k HashKey) index {
	return index{h: newKeyedHash(k), dir: []*segment{newSegment(0)}}
}

func (x *index) len() int { return x.n + len(x.overflow) }

// hash returns key's hash, never 0.
func (x *index) hash(key []byte) uint64 { return x.h.sum(key) }

func (x *index) hashString(key string) uint64 { return x.h.sumString(key) }

// segmentOf returns the segment of hash h.
func (x *index) segmentOf(h uint64) *segment {
	// A shift by 64 or more gives 0, the one entry of a directory of depth 0.
	return x.dir[h>>(64-x.depth)]
}

// slotOf returns the segment of hash h and h's slot in it, or the free
// slot where it would go.
func (x *index) slotOf(h uint64) (*segment, int, bool) {
	s := x.segmentOf(h)
	i, ok := s.find(h)
	return s, i, ok
}

// find returns the slot of h in s, or the free slot where it would go.
func (s *segment) find(h uint64) (int, bool) {
	for i := int(h>>1) & segmentMask; ; i = (i + 1) & segmentMask {
		switch s.slots[i].hash {
		case h:
			return i, true
		case 0:
			return i, false
		}
	}
}

// get returns where the record of key is.
func (x *index) get(a *arena, key []byte) (ref, bool) {
	if s, i, ok := x.slotOf(x.hash(key)); ok {
		if r := s.slots[i].at; a.at(r).key() == string(key) {
			return r, true
		}
	}
	if x.overflow != nil {
		r, ok := x.overflow[string(key)]
		return r, ok
	}
	return 0, false
}

// holds reports whether r, the place of a record of key, is where the
// index has key: whether that record is live. Unlike get it does not read
// the record the index points to, which for a record left behind by a
// newer write is elsewhere in the arena and out of the cache.
func (x *index) holds(key string, r ref) bool {
	if s, i, ok := x.slotOf(x.hashString(key)); ok && s.slots[i].at == r {
		return true // a place holds one record, and r's is key's
	}
	if x.overflow != nil {
		cur, ok := x.overflow[key]
		return ok && cur == r
	}
	return false
}

// put makes r the place of the record of key.
func (x *index) put(a *arena, key string, r ref) {
	if x.overflow != nil {
		if _, ok := x.overflow[key]; ok {
			x.overflow[key] = r
			return
		}
	}
	h := x.hashString(key)
	s, i, ok := x.slotOf(h)
	switch {
	case ok && a.at(s.slots[i].at).key() == key:
		s.slots[i].at = r
		return
	case ok:
		if x.overflow == nil {
			x.overflow = make(map[string]ref)
		}
		x.overflow[strings.Clone(key)] = r // key may alias a slab
		return
	}
	// A half takes every key only with hashes of one more bit in common,
	// so this splits once in all likelihood.
	for s.n >= segmentFull {
		x.split(s)
		s, i, _ = x.slotOf(h)
	}
	s.slots[i] = slot{h, r}
	s.n++
	x.n++
}

// split replaces s with two segments, one for each value of the hash's
// bit after the s.depth that s's keys share.
func (x *index) split(s *segment) {
	if s.depth == x.depth {
		dir := make([]*segment, 2*len(x.dir))
		for i, t := range x.dir {
			dir[2*i], dir[2*i+1] = t, t
		}
		x.dir = dir
		x.depth++
	}
	var halves [2]*segment
	halves[0], halves[1] = newSegment(s.depth+1), newSegment(s.depth+1)
	var prefix uint64
	for i := range segmentSlots {
		h := s.slots[i].hash
		if h == 0 {
			continue
		}
		prefix = h >> (64 - s.depth)
		t := halves[h>>(63-s.depth)&1]
		j, _ := t.find(h)
		t.slots[j] = s.slots[i]
		t.n++
	}
	// s held the directory entries that begin with its prefix: the first
	// half of them go to the first half of s.
	span := 1 << (x.depth - s.depth)
	first := int(prefix) << (x.depth - s.depth)
	for i := range span {
		x.dir[first+i] = halves[i/(span/2)]
	}
}

// delete forgets key.
func (x *index) delete(a *arena, key string) {
	if s, i, ok := x.slotOf(x.hashString(key)); ok && a.at(s.slots[i].at).key() == key {
		s.remove(i)
		x.n--
		return
	}
	delete(x.overflow, key)
	if len(x.overflow) == 0 {
		x.overflow = nil
	}
}

// remove frees slot i, moving back into it the first later slot of the
// same probe run whose key may live there, and so on for the slot that
// one left.
func (s *segment) remove(i int) {
	s.n--
	for j := i; ; {
		j = (j + 1) & segmentMask
		h := s.slots[j].hash
		if h == 0 {
			s.slots[i] = slot{}
			return
		}
		// The key at j may move to i if its home slot is not after i in
		// the run, that is, not cyclically within (i, j].
		if home := int(h>>1) & segmentMask; (j-home)&segmentMask >= (j-i)&segmentMask {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
}

// all yields where every record is. Between steps the caller may change
// the index: a key present throughout is yielded once, in its place at
// the time it is reached; a key created meanwhile may be missed. It goes
// through the hashes in order of their top bits, a segment at a time, and
// looks each one up again when it yields it.
func (x *index) all() iter.Seq[ref] {
	return func(yield func(ref) bool) {
		hashes := make([]uint64, 0, segmentFull)
		// next is the first hash prefix not yet gone through, of 64 bits;
		// segments only ever split, so it always starts one.
		for next, done := uint64(0), false; !done; {
			s := x.segmentOf(next)
			hashes = hashes[:0]
			for _, sl := range s.slots {
				if sl.hash != 0 {
					hashes = append(hashes, sl.hash)
				}
			}
			// The segment's range ends where its prefix does; past the
			// last prefix (and for depth 0) that is 1<<64, which is 0.
			next = (next>>(64-s.depth) + 1) << (64 - s.depth)
			done = next == 0
			for _, h := range hashes {
				if s, i, ok := x.slotOf(h); ok && !yield(s.slots[i].at) {
					return
				}
			}
		}
		if len(x.overflow) == 0 {
			return
		}
		keys := make([]string, 0, len(x.overflow))
		for key := range x.overflow {
			keys = append(keys, key)
		}
		for _, key := range keys {
			if r, ok := x.overflow[key]; ok && !yield(r) {
				return
			}
		}
	}
}

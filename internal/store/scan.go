package store

import (
	"cmp"
	"math"
	"slices"
)

// A scan lists the keys in the order of their hash, a page at a time. Its
// position is the first hash it has not gone through yet: every key whose
// hash is below it was looked at by an earlier page. The hash is keyed
// (HashKey), so the order is the same on every machine with the same key,
// whatever order the keys came in, and a position made on one node of a
// cluster continues on another. A key present from the first page to the
// last is listed once; one created or deleted meanwhile may or may not be.
//
// A page goes through the index a segment at a time: it sorts the hashes
// of one segment (at most segmentFull) and reads the records of the keys
// it looks at, so its cost is bounded by its budget whatever the number of
// keys.

// ScanQuery says what one page of a scan looks at.
type ScanQuery struct {
	// From is the position to start from: 0 for the first page.
	From uint64
	// Now is the reader's time: keys past their deadline are not listed.
	Now int64
	// Examine bounds the keys the page looks at, MaxBytes the total length
	// of the keys it lists, Segments the segments of the index it goes
	// through (so that a page over an index emptied by deletions stays
	// short).
	Examine, MaxBytes, Segments int
	// Match selects the keys to list; nil lists every key.
	Match func(key string) bool
}

// ScanPage is one page of a scan.
type ScanPage struct {
	// Keys are the keys listed; they alias the machine's memory, which is
	// never written over, and stay valid after the machine changes.
	Keys []string
	// Next is the position of the next page, when More is set.
	Next uint64
	More bool
}

// ScanID identifies the order of the machine's scans: positions are
// valid only on a machine with the same ScanID.
func (m *Machine) ScanID() uint32 { return m.keys.h.id() }

// Scan returns one page of a scan from q.From.
func (m *Machine) Scan(q ScanQuery, keys []string) ScanPage {
	examined, size := 0, 0
	from := q.From
	for seg := 0; ; seg++ {
		if seg == q.Segments {
			return ScanPage{Keys: keys, Next: from, More: true}
		}
		ents, end, last := m.keys.segmentFrom(from, m.scratch[:0])
		m.scratch = ents[:0]
		for i := 0; i < len(ents); {
			h := ents[i].hash
			// Keys of one hash (a collision) go in the same page: the
			// position cannot tell them apart.
			for ; i < len(ents) && ents[i].hash == h; i++ {
				examined++
				r := m.arena.at(ents[i].at)
				key := r.key()
				if r.flags()&flagDeadline != 0 && m.deadlineOf[key].at <= q.Now {
					continue
				}
				if q.Match == nil || q.Match(key) {
					keys = append(keys, key)
					size += len(key)
				}
			}
			if examined >= q.Examine || size >= q.MaxBytes {
				if (i == len(ents) && last) || h == math.MaxUint64 {
					return ScanPage{Keys: keys}
				}
				return ScanPage{Keys: keys, Next: h + 1, More: true}
			}
		}
		if last {
			return ScanPage{Keys: keys}
		}
		from = end
	}
}

// scanEntry is a key met by a scan: its hash and the place of its record.
type scanEntry struct {
	hash uint64
	at   ref
}

// segmentFrom appends to out, sorted by hash, the keys whose hash is at
// least from in the segment that holds from (and the overflowing keys of
// its range). end is the first hash past the segment's range; last is set
// when the range goes to the end of the hashes.
func (x *index) segmentFrom(from uint64, out []scanEntry) (ents []scanEntry, end uint64, last bool) {
	s := x.segmentOf(from)
	// A shift by 64 gives 0: a segment of depth 0 covers every hash, and
	// the end of the last range is 1<<64, which is 0.
	start := from >> (64 - s.depth) << (64 - s.depth)
	end = start + 1<<(64-s.depth)
	last = end == 0
	for _, sl := range s.slots {
		if sl.hash >= from && sl.hash != 0 {
			out = append(out, scanEntry(sl))
		}
	}
	for key, at := range x.overflow {
		if h := x.hashString(key); h >= from && (last || h < end) {
			out = append(out, scanEntry{h, at})
		}
	}
	slices.SortFunc(out, func(a, b scanEntry) int { return cmp.Compare(a.hash, b.hash) })
	return out, end, last
}

package store

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"testing"
)

// storeRecord writes a record of key and value to a and returns its place.
func storeRecord(a *arena, key, value string) ref {
	h := recordHeader{}
	at, b := a.alloc(recordSize(h, len(key), len(value)))
	writeRecord(b, h, key, []byte(value))
	return at
}

// checkIndex checks that x finds every key of want at its place and
// nothing more, and the shape of its table: each segment takes the
// directory entries of its hash prefix, and holds only hashes with that
// prefix, each where a lookup finds it.
func checkIndex(t *testing.T, a *arena, x *index, want map[string]ref) {
	t.Helper()
	if x.len() != len(want) {
		t.Fatalf("%d keys, want %d", x.len(), len(want))
	}
	for key, at := range want {
		if got, ok := x.get(a, []byte(key)); !ok || got != at {
			t.Fatalf("%s at %#x, %v; want %#x", key, got, ok, at)
		}
		if !x.holds(key, at) {
			t.Fatalf("%s: its record at %#x is not live", key, at)
		}
	}
	n := 0
	for i := 0; i < len(x.dir); {
		s := x.dir[i]
		span := 1 << (x.depth - s.depth)
		if i%span != 0 {
			t.Fatalf("a segment of depth %d starts at entry %d of a directory of depth %d", s.depth, i, x.depth)
		}
		for j := i; j < i+span; j++ {
			if x.dir[j] != s {
				t.Fatalf("entry %d: another segment than entry %d", j, i)
			}
		}
		held := 0
		for k, sl := range s.slots {
			if sl.hash == 0 {
				continue
			}
			held++
			if p := int(sl.hash >> (64 - x.depth)); p < i || p >= i+span {
				t.Fatalf("hash %#x in the segment of entries %d to %d", sl.hash, i, i+span-1)
			}
			if got, ok := s.find(sl.hash); !ok || got != k {
				t.Fatalf("hash %#x in slot %d, found in %d, %v", sl.hash, k, got, ok)
			}
		}
		if held != s.n || held > segmentFull {
			t.Fatalf("a segment holds %d keys and counts %d", held, s.n)
		}
		n += held
		i += span
	}
	if n != x.n {
		t.Fatalf("the segments hold %d keys, the index counts %d", n, x.n)
	}
}

// TestIndexAgainstAMap puts and deletes keys at random, enough for many
// splits, and compares the index with a map doing the same.
func TestIndexAgainstAMap(t *testing.T) {
	var a arena
	x := newIndex(RandomHashKey())
	want := map[string]ref{}
	r := rand.New(rand.NewPCG(1, 2))
	const keys = 40000
	for step := range 200000 {
		key := fmt.Sprint("key", r.IntN(keys))
		if r.IntN(4) == 0 {
			x.delete(&a, key)
			delete(want, key)
		} else {
			at := storeRecord(&a, key, "v")
			x.put(&a, key, at)
			want[key] = at
		}
		if step%40000 == 0 {
			checkIndex(t, &a, &x, want)
		}
	}
	checkIndex(t, &a, &x, want)
	if x.depth < 3 {
		t.Fatalf("a directory of depth %d for %d keys", x.depth, len(want))
	}
	for key := range want {
		if _, ok := x.get(&a, []byte(key+"?")); ok {
			t.Fatalf("%s? found", key)
		}
	}
	for key := range want {
		x.delete(&a, key)
		delete(want, key)
	}
	checkIndex(t, &a, &x, want)
}

// TestSegmentRemoveKeepsProbeRuns crowds keys into a few home slots at
// the end and the start of a segment, so that their probe runs are long
// and wrap around, and removes them in random order: every key left must
// stay where a lookup finds it.
func TestSegmentRemoveKeepsProbeRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := newSegment(0)
	in := map[uint64]bool{}
	hash := func() uint64 {
		home := (segmentSlots - 4 + r.IntN(8)) & segmentMask
		return r.Uint64()<<(segmentBits+1) | uint64(home)<<1 | 1
	}
	for step := range 20000 {
		if len(in) > 0 && (len(in) >= 200 || r.IntN(2) == 0) {
			var h uint64
			for h = range in {
				break
			}
			i, ok := s.find(h)
			if !ok {
				t.Fatalf("step %d: %#x not found", step, h)
			}
			s.remove(i)
			delete(in, h)
			if _, ok := s.find(h); ok {
				t.Fatalf("step %d: %#x found after its removal", step, h)
			}
		} else {
			h := hash()
			i, ok := s.find(h)
			if ok {
				continue
			}
			s.slots[i] = slot{h, ref(h)}
			s.n++
			in[h] = true
		}
		for h := range in {
			if i, ok := s.find(h); !ok || s.slots[i].at != ref(h) {
				t.Fatalf("step %d: %#x lost", step, h)
			}
		}
		held := 0
		for _, sl := range s.slots {
			if sl.hash != 0 {
				held++
			}
		}
		if held != len(in) || s.n != len(in) {
			t.Fatalf("step %d: %d slots taken, %d counted, want %d", step, held, s.n, len(in))
		}
	}
}

// TestIndexAllWhileChanging changes the index between the steps of an
// iteration, as a snapshot taken under load does: deletions, updates, and
// creations enough to split segments. Every key present throughout must
// be yielded once, in its place at the time.
func TestIndexAllWhileChanging(t *testing.T) {
	var a arena
	x := newIndex(RandomHashKey())
	r := rand.New(rand.NewPCG(5, 6))
	const keys = 20000
	cur := map[string]ref{}
	throughout := map[string]bool{}
	for i := range keys {
		key := fmt.Sprint("key", i)
		cur[key] = storeRecord(&a, key, "v")
		x.put(&a, key, cur[key])
		throughout[key] = true
	}
	depth := x.depth
	seen := map[string]int{}
	next, stop := iter.Pull(x.all())
	defer stop()
	created := 0
	for {
		at, ok := next()
		if !ok {
			break
		}
		key := a.at(at).key()
		seen[key]++
		if want, ok := cur[key]; !ok || want != at {
			t.Fatalf("%s yielded at %#x; its place is %#x, %v", key, at, want, ok)
		}
		for range 3 {
			key := fmt.Sprint("key", r.IntN(keys))
			switch r.IntN(3) {
			case 0:
				x.delete(&a, key)
				delete(cur, key)
				delete(throughout, key)
			case 1:
				if _, ok := cur[key]; ok {
					cur[key] = storeRecord(&a, key, "w")
					x.put(&a, key, cur[key])
				}
			default:
				key := fmt.Sprint("new", created)
				created++
				cur[key] = storeRecord(&a, key, "v")
				x.put(&a, key, cur[key])
			}
		}
	}
	for key, n := range seen {
		if n > 1 {
			t.Fatalf("%s yielded %d times", key, n)
		}
	}
	for key := range throughout {
		if seen[key] != 1 {
			t.Fatalf("%s, present throughout, not yielded", key)
		}
	}
	if x.depth == depth {
		t.Fatalf("no split during the iteration (depth %d)", depth)
	}
	checkIndex(t, &a, &x, cur)
}

// TestIndexHashCollisions gives two keys the same hash: both must stay
// reachable, through every change.
func TestIndexHashCollisions(t *testing.T) {
	var a arena
	x := newIndex(RandomHashKey())
	put := func(key, value string) ref { return storeRecord(&a, key, value) }
	// Put a and b in the same hash slot by hand, as a collision would.
	x.put(&a, "a", put("a", "1"))
	x.overflow = map[string]ref{"b": put("b", "2")}
	check := func(key, value string) {
		t.Helper()
		at, ok := x.get(&a, []byte(key))
		if value == "" {
			if ok {
				t.Fatalf("%s still found", key)
			}
			return
		}
		if !ok || string(a.at(at).value()) != value {
			t.Fatalf("%s = %q, %v; want %q", key, a.at(at).value(), ok, value)
		}
	}
	live := func(key string, at ref, want bool) {
		t.Helper()
		if x.holds(key, at) != want {
			t.Fatalf("%s at %#x live: %v, want %v", key, at, !want, want)
		}
	}
	check("a", "1")
	check("b", "2")
	a1, _ := x.get(&a, []byte("a"))
	b2, _ := x.get(&a, []byte("b"))
	live("a", a1, true)
	live("b", b2, true)
	x.put(&a, "b", put("b", "3")) // an update of the overflowing key stays in overflow
	check("b", "3")
	b3, _ := x.get(&a, []byte("b"))
	live("b", b2, false) // left behind by the update
	live("b", b3, true)
	if x.len() != 2 {
		t.Fatalf("len %d", x.len())
	}
	x.put(&a, "a", put("a", "4"))
	live("a", a1, false)
	x.delete(&a, "a")
	check("a", "")
	check("b", "3")
	live("b", b3, true)
	x.delete(&a, "b")
	check("b", "")
	live("b", b3, false)
	if x.len() != 0 || x.overflow != nil {
		t.Fatalf("len %d, overflow %v", x.len(), x.overflow)
	}
}

package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scanAll lists every key of m that match selects, page by page, with
// between pages the changes of between (which may be nil).
func scanAll(t *testing.T, m *Machine, q ScanQuery, between func(page int)) (listed []string, pages int) {
	t.Helper()
	for {
		p := m.Scan(q, nil)
		listed = append(listed, p.Keys...)
		pages++
		if !p.More {
			return listed, pages
		}
		if p.Next < q.From && q.From != 0 {
			t.Fatalf("page %d: the position went back from %#x to %#x", pages, q.From, p.Next)
		}
		q.From = p.Next
		if between != nil {
			between(pages)
		}
	}
}

func TestScanListsEveryKeyOnce(t *testing.T) {
	// Every key of several segments at each page size; one key a page
	// (each page sorts a segment) over fewer keys, still several segments.
	for _, c := range []struct {
		keys     int
		examines []int
	}{
		{20000, []int{7, 1000, 1 << 30}},
		{7000, []int{1}},
	} {
		m := New()
		want := map[string]bool{}
		for i := range c.keys {
			key := fmt.Sprint("key", i)
			apply(t, m, set(key, "v", v(100, uint32(i))))
			want[key] = true
		}
		if n := segmentCount(m); n < 2 {
			t.Fatalf("%d keys in %d segment(s), want several", c.keys, n)
		}
		for _, examine := range c.examines {
			listed, pages := scanAll(t, m, ScanQuery{Now: 100, Examine: examine, MaxBytes: 1 << 30, Segments: 1 << 30}, nil)
			if len(listed) != len(want) {
				t.Fatalf("examine %d: %d keys listed in %d pages, want %d", examine, len(listed), pages, len(want))
			}
			seen := map[string]bool{}
			for _, k := range listed {
				if !want[k] || seen[k] {
					t.Fatalf("examine %d: %q listed twice or not stored", examine, k)
				}
				seen[k] = true
			}
			if examine == 1 && pages < len(want) {
				t.Fatalf("examine 1: %d pages for %d keys", pages, len(want))
			}
		}
	}
}

// segmentCount is the number of segments of m's index.
func segmentCount(m *Machine) int {
	seen := map[*segment]bool{}
	for _, s := range m.keys.dir {
		seen[s] = true
	}
	return len(seen)
}

// TestScanOrderIsTheKeys: two machines with the same hash key, filled in
// different orders, page alike: a position made on one continues on the
// other. A machine with another key pages differently.
func TestScanOrderIsTheKeys(t *testing.T) {
	k := RandomHashKey()
	a, b := NewKeyed(k), NewKeyed(k)
	const n = 10000
	for i := range n {
		apply(t, a, set(fmt.Sprint("k", i), "v", v(100, 0)))
		apply(t, b, set(fmt.Sprint("k", n-1-i), "v", v(100, 0)))
	}
	if a.ScanID() != b.ScanID() || a.ScanID() == New().ScanID() {
		t.Fatalf("scan ids %d %d, another key's %d", a.ScanID(), b.ScanID(), New().ScanID())
	}
	q := ScanQuery{Now: 100, Examine: 100, MaxBytes: 1 << 20, Segments: 1 << 30}
	var listed []string
	for turn := 0; ; turn++ {
		m := a
		if turn%2 == 1 {
			m = b
		}
		p := m.Scan(q, nil)
		listed = append(listed, p.Keys...)
		if !p.More {
			break
		}
		q.From = p.Next
	}
	slices.Sort(listed)
	if len(slices.Compact(listed)) != n {
		t.Fatalf("%d distinct keys listed alternating between the machines, want %d", len(listed), n)
	}
}

// TestScanAgainstAModel pages through a machine while keys are set,
// deleted and expire between the pages, and checks what the scan promises:
// every key present throughout is listed, no key is listed twice, no key
// that had expired when its page was made, no key the pattern excludes.
func TestScanAgainstAModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DSS_SCAN_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (DSS_SCAN_SEED=%d to repeat)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	for round := range 8 {
		m := New()
		const space = 5000
		now := int64(1000)
		var ver uint32
		// deadline holds the model: key -> its deadline (0: none).
		model := map[string]int64{}
		write := func() {
			ver++
			key := "k" + strconv.Itoa(r.IntN(space))
			if r.IntN(4) == 0 {
				m.Apply(&Command{Op: OpDel, Key: []byte(key), Time: now, Version: v(now, ver)}, nil)
				delete(model, key)
				return
			}
			c := set(key, "v", v(now, ver))
			c.Time = now
			if r.IntN(3) == 0 {
				c.ExpiresAt = now + 1 + int64(r.IntN(50))
			}
			m.Apply(c, nil)
			model[key] = c.ExpiresAt
		}
		for range space {
			write()
		}
		prefix := []string{"", "k1", "k2"}[r.IntN(3)]
		match := func(key string) bool { return strings.HasPrefix(key, prefix) }
		// throughout holds the keys live and matching at the start; a key
		// changed during the scan leaves it.
		throughout := map[string]bool{}
		for key, d := range model {
			if match(key) && (d == 0 || d > now) {
				throughout[key] = true
			}
		}
		listed := map[string]bool{}
		q := ScanQuery{Now: now, Examine: 1 + r.IntN(300), MaxBytes: 1 << 20, Segments: 1 + r.IntN(3), Match: match}
		for {
			p := m.Scan(q, nil)
			for _, key := range p.Keys {
				d, ok := model[key]
				switch {
				case listed[key]:
					t.Fatalf("seed %d round %d: %q listed twice", seed, round, key)
				case !match(key):
					t.Fatalf("seed %d round %d: %q does not match", seed, round, key)
				case !ok || (d != 0 && d <= q.Now):
					t.Fatalf("seed %d round %d: %q listed but deleted or expired (deadline %d, now %d)", seed, round, key, d, q.Now)
				}
				listed[key] = true
			}
			if !p.More {
				break
			}
			q.From = p.Next
			// Between pages: writes, deletes, and time passing.
			for range r.IntN(40) {
				write()
			}
			now += int64(r.IntN(5))
			q.Now = now
			for key, d := range model {
				if d != 0 && d <= now {
					delete(throughout, key)
				}
			}
			// The keys written just now are no longer "throughout".
			for key := range throughout {
				if _, ok := model[key]; !ok {
					delete(throughout, key)
				}
			}
			// Expire some keys as the engine would.
			for _, key := range m.AppendExpired(nil, now, r.IntN(10)) {
				ver++
				m.Apply(&Command{Op: OpExpire, Key: []byte(key), Time: now, Version: v(now, ver)}, nil)
				delete(model, key)
				delete(throughout, key)
			}
		}
		for key := range throughout {
			if !listed[key] {
				t.Fatalf("seed %d round %d: %q present throughout, never listed", seed, round, key)
			}
		}
	}
}

// TestScanOverflow: a key in the overflow (where a key whose hash another
// key holds goes) is listed once, in the page of its hash's range.
func TestScanOverflow(t *testing.T) {
	m := New()
	for i := range 10000 {
		apply(t, m, set(fmt.Sprint("k", i), "1", v(100, 0)))
	}
	at, b := m.arena.alloc(recordSize(recordHeader{}, 1, 1))
	writeRecord(b, recordHeader{}, "b", []byte("2"))
	m.keys.overflow = map[string]ref{"b": at}
	for _, examine := range []int{1, 100, 1 << 20} {
		listed, _ := scanAll(t, m, ScanQuery{Now: 100, Examine: examine, MaxBytes: 1 << 20, Segments: 1 << 30}, nil)
		if len(listed) != 10001 || slices.Index(listed, "b") < 0 {
			t.Fatalf("examine %d: %d keys listed, b at %d", examine, len(listed), slices.Index(listed, "b"))
		}
		slices.Sort(listed)
		if len(slices.Compact(listed)) != 10001 {
			t.Fatalf("examine %d: a key listed twice", examine)
		}
	}
}

// TestScanBoundedWork: a page over a million keys looks at no more than
// its budget, and a full scan's memory does not grow with the keys.
func TestScanBoundedWork(t *testing.T) {
	n := 30_000
	if os.Getenv("DSS_SCAN_MILLION") != "" {
		n = 1_000_000
	}
	if testing.Short() {
		n = 20_000
	}
	m := New()
	for i := range n {
		apply(t, m, set("key/"+strconv.Itoa(i), "v", v(100, 0)))
	}
	q := ScanQuery{Now: 100, Examine: 1000, MaxBytes: 1 << 20, Segments: 4}
	total, pages, most := 0, 0, 0
	for {
		p := m.Scan(q, nil)
		total += len(p.Keys)
		most = max(most, len(p.Keys))
		pages++
		if !p.More {
			break
		}
		q.From = p.Next
	}
	if total != n {
		t.Fatalf("%d keys listed, want %d", total, n)
	}
	// A page lists at most its budget plus the keys of one hash.
	if most > q.Examine+1 {
		t.Fatalf("a page of %d keys for a budget of %d", most, q.Examine)
	}
	// What a page holds besides its keys is the hashes of one segment.
	if c := cap(m.scratch); c > segmentSlots {
		t.Fatalf("the scan's scratch holds %d entries, more than a segment's %d slots", c, segmentSlots)
	}
	t.Logf("%d keys in %d pages", n, pages)
}

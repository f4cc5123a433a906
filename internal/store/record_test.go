package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dssio/dss/hlc"
)

func testRecord(h recordHeader, key string, value []byte) record {
	return writeRecord(make([]byte, recordSize(h, len(key), len(value))), h, key, value)
}

func TestRecordRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		h     recordHeader
		key   string
		value []byte
	}{
		{recordHeader{wall: 1795266091202, counter: 7, flags: flagFenced | flagDeadline, seq: 1 << 40, node: 3}, "key:000000000001", bytes.Repeat([]byte("v"), 100)},
		{recordHeader{wall: -1, counter: 1<<32 - 1, seq: 0, node: 1 << 20}, "k", nil},
		{recordHeader{wall: 5}, string(bytes.Repeat([]byte{0xff, 0, '\r'}, 200)), []byte("\x00")},
	} {
		r := testRecord(tt.h, tt.key, tt.value)
		if len(r) != recordSize(tt.h, len(tt.key), len(tt.value)) {
			t.Errorf("record of %d bytes, want %d", len(r), recordSize(tt.h, len(tt.key), len(tt.value)))
		}
		if got := r.header(); got != tt.h {
			t.Errorf("header %+v, want %+v", got, tt.h)
		}
		if r.key() != tt.key || !bytes.Equal(r.value(), tt.value) {
			t.Errorf("key %q value %q", r.key(), r.value())
		}
		if back := recordAt(unsafe.Pointer(unsafe.StringData(string(r)))); back != r {
			t.Error("recordAt does not find the record's end")
		}
	}
}

// TestSideTablesKeepNoSlab: the keys the side tables keep must not alias a
// slab, or a single fenced key would keep its whole slab from being freed.
func TestSideTablesKeepNoSlab(t *testing.T) {
	m := New()
	for i := 0; i < 5; i++ {
		c := set("k", string(rune('a'+i)), v(int64(100+i), 0))
		c.Fence, c.HasFence = v(1, uint32(i)), true
		c.ExpiresAt = int64(10_000 + i)
		if res, _ := m.Apply(c, nil); res.Outcome != Applied {
			t.Fatalf("SET %d: %+v", i, res)
		}
	}
	inSlab := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		for _, sl := range m.arena.slabs {
			if sl.buf == nil {
				continue
			}
			b := uintptr(unsafe.Pointer(unsafe.SliceData(sl.buf)))
			if p >= b && p < b+uintptr(cap(sl.buf)) {
				return true
			}
		}
		return false
	}
	for key := range m.fences {
		if inSlab(key) {
			t.Fatal("the fences keep a key inside a slab")
		}
	}
	for key, d := range m.deadlineOf {
		if inSlab(key) || inSlab(d.key) {
			t.Fatal("the deadlines keep a key inside a slab")
		}
	}
	if m.fences["k"] != v(1, 4) || m.deadlineOf["k"].at != 10_004 {
		t.Fatalf("side tables: %v %v", m.fences["k"], m.deadlineOf["k"].at)
	}
}

func TestNodesAreInterned(t *testing.T) {
	m := New()
	for i := 0; i < 100; i++ {
		m.Apply(set(string(rune('a'+i%26)), "v", hlc.Timestamp{Wall: int64(i), Node: []string{"n1", "n2"}[i%2]}), nil)
	}
	if len(m.nodes) != 2 {
		t.Fatalf("%d node ids interned, want 2", len(m.nodes))
	}
	if _, ver, _ := m.Get([]byte("b"), 0); ver.Node != "n1" && ver.Node != "n2" {
		t.Fatalf("version %v", ver)
	}
}

// TestCompaction overwrites keys until most of the slabs are garbage: the
// arena must compact it away, and every key must keep its latest value.
func TestCompaction(t *testing.T) {
	m := New()
	value := bytes.Repeat([]byte("x"), 200)
	const keys = 40000
	for round := 0; round < 10; round++ {
		for i := 0; i < keys; i++ {
			val := append([]byte(fmt.Sprint(round, "-")), value...)
			m.Apply(set(fmt.Sprint("key", i), string(val), v(int64(round*keys+i), 0)), nil)
		}
	}
	// Deleting half leaves garbage that later writes compact.
	for i := 0; i < keys; i += 2 {
		m.Apply(&Command{Op: OpDel, Key: []byte(fmt.Sprint("key", i)), Version: v(1<<40, uint32(i))}, nil)
	}
	for i := 0; i < 20*keys; i++ {
		m.Apply(set(fmt.Sprint("other", i%100), "v", v(2<<40, uint32(i))), nil)
	}
	a := &m.arena
	garbage := float64(a.used-a.live) / float64(a.used)
	t.Logf("%d slabs, %d MiB used, %.0f%% garbage", len(a.slabs)-len(a.freeIDs), a.used>>20, 100*garbage)
	if a.used-a.live > compactMin && garbage > 2*compactAbove {
		t.Fatalf("%.0f%% of the arena is garbage", 100*garbage)
	}
	// Ten rounds of overwrites wrote ten times the live data.
	if a.used > 2*a.live+compactMin {
		t.Fatalf("%d MiB of slabs for %d MiB of records", a.used>>20, a.live>>20)
	}
	if a.live != int64(liveBytes(m)) {
		t.Fatalf("the arena counts %d live bytes, the records take %d", a.live, liveBytes(m))
	}
	for i := 0; i < keys; i++ {
		val, _, ok := m.Get([]byte(fmt.Sprint("key", i)), 0)
		if i%2 == 0 {
			if ok {
				t.Fatalf("key%d survived its deletion", i)
			}
			continue
		}
		if !ok || !bytes.HasPrefix(val, []byte("9-")) {
			t.Fatalf("key%d = %.10q, %v", i, val, ok)
		}
	}
}

func liveBytes(m *Machine) int {
	n := 0
	for at := range m.keys.all() {
		n += len(m.arena.at(at))
	}
	return n
}

// TestCompactionWorkPerRequestIsBounded: a slab that is nearly all
// garbage is compacted a few records per request, not in one go: each
// dead record costs an index lookup, and a request that looked at all of
// a slab's held up every other.
func TestCompactionWorkPerRequestIsBounded(t *testing.T) {
	m := New()
	a := &m.arena
	value := bytes.Repeat([]byte("x"), 100)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; !a.compactOn; i++ {
		// Ten thousand keys overwritten at random: the older slabs are
		// nearly all garbage, but for a few keys not written since.
		m.Apply(set(fmt.Sprint("key", r.IntN(10000)), string(value), v(int64(i+1), 0)), nil)
		if i > 1e6 {
			t.Fatal("compaction never started")
		}
	}
	// The victim's bytes stay readable here once the arena drops it.
	victim, buf := a.victim, a.slabs[a.victim].buf
	count := func(from, to int) (n int) {
		for off := from; off < to; off += len(recordAt(unsafe.Pointer(&buf[off]))) {
			n++
		}
		return n
	}
	records := count(0, len(buf))
	if records < 4*compactScan {
		t.Fatalf("the victim holds %d records; the test needs more", records)
	}
	calls := 0
	for a.compactOn && a.victim == victim {
		before := a.next
		m.compact()
		end := a.next
		if !a.compactOn || a.victim != victim {
			end = min(end, len(buf))
		}
		if seen := count(before, end); seen > compactScan {
			t.Fatalf("one call looked at %d records", seen)
		}
		calls++
	}
	if calls < records/compactScan {
		t.Fatalf("%d records compacted in %d calls", records, calls)
	}
}

// TestVictimSearchIsBounded: the search for a slab to compact looks at a
// few slabs per call and goes on where it stopped; after a sweep that
// found nothing worth compacting, it waits for more garbage.
func TestVictimSearchIsBounded(t *testing.T) {
	const slabs = 200
	a := &arena{}
	for range slabs {
		a.slabs = append(a.slabs, slab{buf: make([]byte, slabSize), live: slabSize * 9 / 10})
	}
	a.used = slabs * slabSize
	a.live = a.used * 9 / 10
	for call := 0; call < slabs/victimScan; call++ {
		before := a.cursor
		if _, ok := a.pickVictim(); ok {
			t.Fatal("picked a slab nine tenths live")
		}
		if a.cursor-before != victimScan {
			t.Fatalf("call %d looked at %d slabs", call, a.cursor-before)
		}
	}
	for a.retryAbove == 0 {
		if _, ok := a.pickVictim(); ok {
			t.Fatal("picked a slab nine tenths live")
		}
	}
	// Until more garbage comes, the search does not look.
	a.slabs[150].live = slabSize / 3
	a.live -= slabSize*9/10 - slabSize/3
	cursor := a.cursor
	if _, ok := a.pickVictim(); ok || a.cursor != cursor {
		t.Fatal("searched again without more garbage")
	}
	a.live -= a.retryAbove
	for range slabs/victimScan + 1 {
		if id, ok := a.pickVictim(); ok {
			if id != 150 {
				t.Fatalf("picked slab %d", id)
			}
			return
		}
	}
	t.Fatal("the slab a third live was never picked")
}

package store

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/dssio/dss/hlc"
)

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
		r, key := makeRecord(tt.h, tt.key, tt.value)
		if got := r.header(); got != tt.h {
			t.Errorf("header %+v, want %+v", got, tt.h)
		}
		if key != tt.key || !bytes.Equal(r.value(), tt.value) {
			t.Errorf("key %q value %q", key, r.value())
		}
		if !inside(key, r) {
			t.Error("the key does not alias the record")
		}
	}
}

// inside reports whether s points into r.
func inside(s string, r record) bool {
	sp := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	rp := uintptr(unsafe.Pointer(unsafe.StringData(string(r))))
	return sp >= rp && sp+uintptr(len(s)) <= rp+uintptr(len(r))
}

// TestOverwriteKeepsNoOldRecord: every key string the machine keeps must
// point into the key's current record, or old records would never be
// freed.
func TestOverwriteKeepsNoOldRecord(t *testing.T) {
	m := New()
	for i := 0; i < 5; i++ {
		c := set("k", string(rune('a'+i)), v(int64(100+i), 0))
		c.Fence, c.HasFence = v(1, uint32(i)), true
		c.ExpiresAt = int64(10_000 + i)
		if res, _ := m.Apply(c, nil); res.Outcome != Applied {
			t.Fatalf("SET %d: %+v", i, res)
		}
	}
	r, _ := m.keys.get([]byte("k"))
	if m.keys.len() != 1 {
		t.Fatalf("%d records indexed", m.keys.len())
	}
	for key := range m.fences {
		if !inside(key, r) {
			t.Fatal("the fences keep an old record's key")
		}
	}
	for key, d := range m.deadlineOf {
		if !inside(key, r) || !inside(d.key, r) {
			t.Fatal("the deadlines keep an old record's key")
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

// TestIndexHashCollisions gives two keys the same hash: both must stay
// reachable, through every change.
func TestIndexHashCollisions(t *testing.T) {
	x := newIndex()
	rec := func(key, value string) record {
		r, _ := makeRecord(recordHeader{}, key, []byte(value))
		return r
	}
	// Put a and b in the same hash slot by hand, as a collision would.
	a, b := rec("a", "1"), rec("b", "2")
	x.put(a)
	x.overflow = map[string]unsafe.Pointer{"b": b.pointer()}
	check := func(key, value string) {
		t.Helper()
		r, ok := x.get([]byte(key))
		if value == "" {
			if ok {
				t.Fatalf("%s still found", key)
			}
			return
		}
		if !ok || string(r.value()) != value {
			t.Fatalf("%s = %q, %v; want %q", key, r.value(), ok, value)
		}
	}
	check("a", "1")
	check("b", "2")
	x.put(rec("b", "3")) // an update of the overflowing key stays in overflow
	check("b", "3")
	if x.len() != 2 {
		t.Fatalf("len %d", x.len())
	}
	x.delete("a")
	check("a", "")
	check("b", "3")
	x.delete("b")
	check("b", "")
	if x.len() != 0 || x.overflow != nil {
		t.Fatalf("len %d, overflow %v", x.len(), x.overflow)
	}
}

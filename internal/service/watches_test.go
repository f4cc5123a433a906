package service

import (
	"slices"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/wire"
)

func TestWatchesRecipientsOncePerRequester(t *testing.T) {
	w := NewWatches[string, int]()
	add := func(r, key string, pattern bool, v int) {
		t.Helper()
		if _, err := w.Add(r, len(r), key, pattern, v); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "s/1", false, 0)
	add("a", "s/*", true, 0)
	add("a", "*", true, 0)
	add("b", "s/?", true, 0)
	add("c", "s/1", false, 1) // its only registration does not count (keep)
	add("d", "s/1", false, 1)
	add("d", "s*", true, 0) // counts: d is told through it
	keep := func(_, _ string, v int, _ bool) bool { return v == 0 }
	got := w.Recipients("s/1", keep)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("recipients %q, want a, b, d once each", got)
	}
	if got := w.Recipients("s/\xff", nil); len(got) != 0 {
		t.Fatalf("a key that is not UTF-8 matched the patterns of %q", got)
	}
	if got := w.Recipients("zz", keep); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("recipients of zz %q", got)
	}
	if !w.Watching("anything") || !w.HasPatterns() {
		t.Fatal("patterns registered, any key may have a recipient")
	}
	if keys := w.Keys(); len(keys) != 1 || keys[0] != "s/1" {
		t.Fatalf("keys %q", keys)
	}
	if n := w.Drop("a"); n != 3 {
		t.Fatalf("dropped %d of a's registrations, want 3", n)
	}
	if n := w.Drop("b") + w.Drop("d"); n != 3 || w.HasPatterns() {
		t.Fatalf("dropped %d, patterns left: %v", n, w.HasPatterns())
	}
	if w.Watching("other") {
		t.Fatal("no pattern left, yet any key is watched")
	}
}

func TestWatchesAddRenewRemove(t *testing.T) {
	w := NewWatches[string, int]()
	w.MaxPer = 2
	if added, err := w.Add("a", 1, "k", false, 1); !added || err != nil {
		t.Fatalf("first registration: %v %v", added, err)
	}
	if added, err := w.Add("a", 1, "k", false, 2); added || err != nil {
		t.Fatalf("again: %v %v", added, err)
	}
	if v, ok := w.Lookup("a", "k", false); !ok || v != 2 {
		t.Fatalf("renewed value %d %v, want 2", v, ok)
	}
	if added, err := w.Add("a", 1, "k", true, 1); !added || err != nil {
		t.Fatalf("the same text as a pattern is another registration: %v %v", added, err)
	}
	if _, err := w.Add("a", 1, "j", false, 1); err != wire.ErrQuotaExceeded {
		t.Fatalf("past the bound: %v", err)
	}
	if _, err := w.Add("a", 1, "j*", true, 1); err != wire.ErrQuotaExceeded {
		t.Fatalf("a pattern past the bound: %v", err)
	}
	if _, ok := w.Remove("a", "k", true); !ok {
		t.Fatal("STOP of the pattern")
	}
	if _, ok := w.Remove("a", "k", true); ok {
		t.Fatal("STOP again found it")
	}
	long := strings.Repeat("x", wire.MaxTopicLen/2)
	if _, err := w.Add("b", 10, long, false, 1); err != wire.ErrKeyTooLong {
		t.Fatalf("a key whose notification topic MQTT cannot carry: %v", err)
	}
	if _, err := w.Add("b", 10, long, true, 1); err != nil {
		t.Fatalf("a long pattern: %v", err)
	}
	var all []string
	w.Each(func(r, key string, pattern bool, v int) {
		all = append(all, r+" "+key[:1])
	})
	slices.Sort(all)
	if !slices.Equal(all, []string{"a k", "b x"}) {
		t.Fatalf("registrations %q", all)
	}
	if keys := w.KeysOf("a"); !slices.Equal(keys, []string{"k"}) {
		t.Fatalf("a's keys %q", keys)
	}
}

package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/wire"
)

func TestKeysPagesInOrder(t *testing.T) {
	n := newNode(t, Config{})
	var want []string
	for i := range 2*snapshotChunk + 7 {
		k := fmt.Sprintf("k%05d", i)
		do(n, set(k, "v"), true)
		want = append(want, k)
	}
	do(n, set("other", "v"), true)
	ctx := context.Background()
	match := func(k string) bool { return strings.HasPrefix(k, "k") }

	var got []string
	q := KeysQuery{Match: match, Limit: 100, MaxBytes: 1 << 20}
	for pages := 0; ; pages++ {
		keys, err := n.Keys(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			if pages != (len(want)+99)/100 {
				t.Errorf("%d pages of 100 for %d keys", pages, len(want))
			}
			break
		}
		got = append(got, keys...)
		q.After, q.HasAfter = keys[len(keys)-1], true
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d keys, want %d in order", len(got), len(want))
	}

	// The byte bound cuts a page short, but never to nothing.
	keys, err := n.Keys(ctx, KeysQuery{Match: match, Limit: 100, MaxBytes: 13})
	if err != nil || !slices.Equal(keys, want[:2]) {
		t.Fatalf("13 bytes of 6-byte keys: %q %v", keys, err)
	}
	keys, err = n.Keys(ctx, KeysQuery{Match: match, Limit: 100, MaxBytes: 1})
	if err != nil || !slices.Equal(keys, want[:1]) {
		t.Fatalf("1 byte: %q %v", keys, err)
	}
}

func TestKeysLeavesOutExpiredKeys(t *testing.T) {
	n := newNode(t, Config{})
	do(n, set("live", "v"), true)
	r := set("short", "v")
	r.PX = 1
	do(n, r, true)
	time.Sleep(5 * time.Millisecond) // past the deadline; the sweep may not have run
	keys, err := n.Keys(context.Background(), KeysQuery{Match: func(string) bool { return true }, Limit: 10, MaxBytes: 100})
	if err != nil || !slices.Equal(keys, []string{"live"}) {
		t.Fatalf("keys %q %v", keys, err)
	}
}

func TestKeysOfAClosedNode(t *testing.T) {
	n := New(Config{Clock: hlc.NewClock("n", nil), Logger: quiet()})
	n.Start()
	_ = n.Close()
	if _, err := n.Keys(context.Background(), KeysQuery{Match: func(string) bool { return true }, Limit: 1}); err != wire.ErrUnavailable {
		t.Fatalf("Keys after Close: %v", err)
	}
}

package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestKeys(t *testing.T) {
	s := startAt(t, "127.0.0.1:0")
	c := dial(t, s.Addr())
	var want []string
	for i := range 2345 {
		k := fmt.Sprintf("sensor/%04d", i)
		mustSet(t, c, k, "v")
		want = append(want, k)
	}
	for _, k := range []string{"other", "bin\x00\n", "bad\xff"} {
		mustSet(t, c, k, "v")
	}

	list := func(pattern string) []string {
		t.Helper()
		var got []string
		for k, err := range c.Keys(ctxT(t), pattern) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, k)
		}
		slices.Sort(got)
		return got
	}
	if got := list("sensor/*"); !slices.Equal(got, want) {
		t.Fatalf("listed %d keys, want the %d sensors", len(got), len(want))
	}
	// A key that is not UTF-8 is never listed.
	if got := list("[bo]*"); !slices.Equal(got, []string{"bin\x00\n", "other"}) {
		t.Fatalf("[bo]*: %q", got)
	}
	if got := list("nothing*"); len(got) != 0 {
		t.Fatalf("no match: %q", got)
	}
	if _, next, err := c.ScanPage(ctxT(t), "*", nil); err != nil || next == nil {
		t.Fatalf("the first page of 2,348 keys: next %q, %v", next, err)
	}
	if _, _, err := c.ScanPage(ctxT(t), "*", []byte("not a token")); !errors.Is(err, ErrBadScanToken) {
		t.Fatalf("a bad token: %v", err)
	}
}

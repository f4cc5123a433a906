package client

import (
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
	for _, k := range []string{"other", "bin\x00\xff\n"} {
		mustSet(t, c, k, "v")
	}

	var got []string
	for k, err := range c.Keys(ctxT(t), "sensor/*") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d keys, want the %d sensors in order", len(got), len(want))
	}

	page, err := c.KeysPage(ctxT(t), "*", "sensor/0009", 3)
	if err != nil || !slices.Equal(page, []string{"sensor/0010", "sensor/0011", "sensor/0012"}) {
		t.Fatalf("a page of 3 after sensor/0009: %q %v", page, err)
	}
	page, err = c.KeysPage(ctxT(t), "[bo]*", "", 0)
	if err != nil || !slices.Equal(page, []string{"bin\x00\xff\n", "other"}) {
		t.Fatalf("[bo]*: %q %v", page, err)
	}
	if page, err = c.KeysPage(ctxT(t), "nothing*", "", 0); err != nil || len(page) != 0 {
		t.Fatalf("no match: %q %v", page, err)
	}
	if _, err := c.KeysPage(ctxT(t), "*", "", 10001); err == nil {
		t.Fatal("a limit beyond 10,000 was accepted")
	}
}

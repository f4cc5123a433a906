package server_test

import (
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
)

// keysOf sends KEYS pattern and returns the keys of the reply.
func keysOf(t *testing.T, c *dsstest.Client, pattern string) []string {
	t.Helper()
	p := c.Request(dsstest.Cmd("KEYS", pattern))
	r, err := resp.ParseReply(p.Payload)
	if err != nil || r.Kind != resp.KindArray {
		t.Fatalf("KEYS %s: %q %v", pattern, p.Payload, err)
	}
	out := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		out[i] = string(e)
	}
	return out
}

func TestKeysListsWhatTheClientMayRead(t *testing.T) {
	f := newAttackFixture(t)
	alice := f.dial(t, "alice-1", "alice")
	bob := f.dial(t, "bob-1", "bob")
	expect(t, "SET", alice.Set([]string{"app/alice/x", "1"}), "+OK\r\n", "any")
	expect(t, "SET", alice.Set([]string{"shared-lock", "a"}), "+OK\r\n", "any")
	expect(t, "SET", bob.Set([]string{"app/bob/y", "2"}), "+OK\r\n", "any")

	if got := keysOf(t, alice, "*"); len(got) != 2 || got[0] != "app/alice/x" || got[1] != "shared-lock" {
		t.Errorf("alice lists %q, want only what she may read", got)
	}
	if got := keysOf(t, bob, "app/*"); len(got) != 1 || got[0] != "app/bob/y" {
		t.Errorf("bob lists %q under app/*", got)
	}
	mallory := f.dial(t, "mallory-1", "mallory")
	if got := keysOf(t, mallory, "*"); len(got) != 0 {
		t.Errorf("mallory, who may read only 'public', lists %q", got)
	}
}

func TestKeysWithoutAPolicy(t *testing.T) {
	_, c := start(t)
	for _, k := range []string{"b", "a", "c/1"} {
		c.Set([]string{k, "v"})
	}
	if got := keysOf(t, c, "*"); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c/1" {
		t.Fatalf("KEYS *: %q", got)
	}
	expect(t, "KEYS with a bad LIMIT", c.Request(dsstest.Cmd("KEYS", "*", "LIMIT", "0")), "-ERR syntax error\r\n", "")
}

package server_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// scanPage sends SCAN pattern [token] as the vendor's client writes it
// and reads the page as it reads it.
func scanPage(t *testing.T, c *dsstest.Client, pattern string, token []byte) (keys []string, next []byte) {
	t.Helper()
	args := [][]byte{[]byte("SCAN"), []byte(pattern)}
	if token != nil {
		args = append(args, token)
	}
	p := c.Request(resp.AppendArray(nil, args...))
	if _, ok := dsstest.UserProperty(p, wire.PropTimestamp); ok {
		t.Fatalf("SCAN %q: the response carries a __ts", pattern)
	}
	raw, tok, more, err := resp.ParseScanPage(p.Payload)
	if err != nil {
		t.Fatalf("SCAN %q: %q: %v", pattern, p.Payload, err)
	}
	for _, k := range raw {
		keys = append(keys, string(k))
	}
	if more {
		next = bytes.Clone(tok)
		if next == nil {
			next = []byte{}
		}
	}
	return keys, next
}

// scanAll lists every key of pattern, page by page.
func scanAll(t *testing.T, c *dsstest.Client, pattern string) []string {
	t.Helper()
	var all []string
	var token []byte
	for pages := 0; ; pages++ {
		keys, next := scanPage(t, c, pattern, token)
		all = append(all, keys...)
		if next == nil {
			slices.Sort(all)
			return all
		}
		if pages > 100000 {
			t.Fatalf("SCAN %q: no end after %d pages", pattern, pages)
		}
		token = next
	}
}

// TestScanBytes checks the exact bytes of SCAN requests and responses, as
// the protocol's section 11 gives them.
func TestScanBytes(t *testing.T) {
	_, c := start(t)
	expect(t, "SCAN of an empty store", c.Request([]byte("*2\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n")), "*1\r\n*0\r\n", "")
	c.Set([]string{"key1", "v"})
	c.Set([]string{"other", "v"})
	expect(t, "SCAN key*", c.Request([]byte("*2\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n")), "*1\r\n*1\r\n$4\r\nkey1\r\n", "")
	expect(t, "scan in lower case", c.Request([]byte("*2\r\n$4\r\nscan\r\n$2\r\nk*\r\n")), "*1\r\n*1\r\n$4\r\nkey1\r\n", "")
	expect(t, "SCAN of an empty pattern", c.Request(dsstest.Cmd("SCAN", "")), "*1\r\n*0\r\n", "")
	expect(t, "SCAN without a pattern", c.Request(dsstest.Cmd("SCAN")), errPayload(wire.ErrWrongArgs), "")
	expect(t, "SCAN with four arguments", c.Request(dsstest.Cmd("SCAN", "*", "t", "x")), errPayload(wire.ErrWrongArgs), "")
	expect(t, "KEYS is no verb", c.Request(dsstest.Cmd("KEYS", "*")), errPayload(wire.ErrUnknownCommand), "")

	// A bad token: one dss never made, and one of another server.
	for _, tok := range []string{"\x00\xffx", "1;1;", "1;2;12345678"} {
		expect(t, fmt.Sprintf("SCAN with token %q", tok),
			c.Request([]byte("*3\r\n$4\r\nSCAN\r\n$1\r\n*\r\n$"+fmt.Sprint(len(tok))+"\r\n"+tok+"\r\n")),
			errPayload(wire.ErrBadScanToken), "")
	}

	// Enough keys for several pages: the first answers *2 with a token
	// of the shape digits;digits;bytes.
	for i := range 3000 {
		c.Set([]string{fmt.Sprintf("key/%04d", i), "v"})
	}
	p := c.Request(dsstest.Cmd("SCAN", "key/*"))
	if !bytes.HasPrefix(p.Payload, []byte("*2\r\n*")) {
		t.Fatalf("the first page of 3,000 keys: %.40q", p.Payload)
	}
	_, tok, more, err := resp.ParseScanPage(p.Payload)
	if err != nil || !more || !bytes.HasPrefix(tok, []byte("1;")) || bytes.Count(tok[:len(tok)-8], []byte(";")) != 2 {
		t.Fatalf("token %q, more %v, %v", tok, more, err)
	}
	if got := scanAll(t, c, "key/*"); len(got) != 3000 || got[0] != "key/0000" || got[2999] != "key/2999" {
		t.Fatalf("key/* lists %d keys", len(got))
	}
}

// TestScanPatternsAndBinaryKeys: SCAN matches the whole key as UTF-8 text;
// a key that is not UTF-8 is never listed, a pattern that is not lists
// nothing; binary bytes that are UTF-8 (NUL, CR, LF) are listed as they
// are.
func TestScanPatternsAndBinaryKeys(t *testing.T) {
	_, c := start(t)
	keys := []string{"user:1", "user:12", "user:é", "a*b", "bin\x00\r\n", "bad\xff", "café"}
	for _, k := range keys {
		c.Set([]string{k, "v"})
	}
	for _, tt := range []struct {
		pattern string
		want    []string
	}{
		{"*", []string{"a*b", "bin\x00\r\n", "café", "user:1", "user:12", "user:é"}},
		{"user:?", []string{"user:1", "user:é"}},
		{"user", nil},
		{"a[*]b", []string{"a*b"}},
		{"bin*", []string{"bin\x00\r\n"}},
		{"bad*", nil},
		{"caf[!a-z]", []string{"café"}},
		{"\xff*", nil},
	} {
		if got := scanAll(t, c, tt.pattern); !slices.Equal(got, tt.want) {
			t.Errorf("SCAN %q lists %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

// TestScanLeavesOutExpiredKeys: a key past its deadline is not listed,
// whether or not the expiry removed it yet.
func TestScanLeavesOutExpiredKeys(t *testing.T) {
	_, c := start(t)
	c.Set([]string{"stays", "v"})
	c.Set([]string{"goes", "v", "PX", "1"})
	dsstest.Eventually(t, "goes to expire", func() bool {
		return string(c.Request(dsstest.Cmd("GET", "goes")).Payload) == "$-1\r\n"
	})
	if got := scanAll(t, c, "*"); !slices.Equal(got, []string{"stays"}) {
		t.Fatalf("SCAN * lists %q", got)
	}
}

func TestScanListsWhatTheClientMayRead(t *testing.T) {
	f := newAttackFixture(t)
	alice := f.dial(t, "alice-1", "alice")
	bob := f.dial(t, "bob-1", "bob")
	expect(t, "SET", alice.Set([]string{"app/alice/x", "1"}), "+OK\r\n", "any")
	expect(t, "SET", alice.Set([]string{"shared-lock", "a"}), "+OK\r\n", "any")
	expect(t, "SET", bob.Set([]string{"app/bob/y", "2"}), "+OK\r\n", "any")
	for i := range 2000 {
		expect(t, "SET", bob.Set([]string{fmt.Sprintf("app/bob/%d", i), "2"}), "+OK\r\n", "any")
	}

	if got := scanAll(t, alice, "*"); !slices.Equal(got, []string{"app/alice/x", "shared-lock"}) {
		t.Errorf("alice lists %q, want only what she may read", got)
	}
	if got := scanAll(t, bob, "app/*"); len(got) != 2001 || !strings.HasPrefix(got[0], "app/bob/") {
		t.Errorf("bob lists %d keys under app/*", len(got))
	}
	mallory := f.dial(t, "mallory-1", "mallory")
	if got := scanAll(t, mallory, "*"); len(got) != 0 {
		t.Errorf("mallory, who may read only 'public', lists %q", got)
	}
}

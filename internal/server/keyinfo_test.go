package server_test

import (
	"strconv"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// KEYINFO, dss's extension, reads a key with the time left before it
// expires and the fencing token that protects it.
func TestKeyInfo(t *testing.T) {
	_, c := start(t)
	expect(t, "missing", c.Request(dsstest.Cmd("KEYINFO", "k")), "$-1\r\n", "")

	v1 := expect(t, "SET", c.Set([]string{"k", "v\r\n1"}), "+OK\r\n", "any")
	expect(t, "plain key", c.Request(dsstest.Cmd("KEYINFO", "k")), "*3\r\n$4\r\nv\r\n1\r\n$2\r\n-1\r\n$0\r\n\r\n", v1.String())

	lock := expect(t, "lock", c.Set([]string{"lock", "me", "NX", "PX", "60000"}), "+OK\r\n", "any")
	v2 := expect(t, "SET with a token and PX", c.Set([]string{"k", "v2", "PX", "30000"}, ft(lock.String())), "+OK\r\n", "any")
	res := c.Request(dsstest.Cmd("keyinfo", "k"))
	expect(t, "KEYINFO", res, string(res.Payload), v2.String())
	r, err := resp.ParseReply(res.Payload)
	if err != nil || r.Kind != resp.KindArray || len(r.Elems) != 3 {
		t.Fatalf("KEYINFO reply %q: %v", res.Payload, err)
	}
	ttl, err := strconv.ParseInt(string(r.Elems[1]), 10, 64)
	if string(r.Elems[0]) != "v2" || err != nil || ttl < 1 || ttl > 30000 || string(r.Elems[2]) != lock.String() {
		t.Fatalf("KEYINFO reply %q: want v2, a time to live of up to 30000 ms and the token %s", res.Payload, lock)
	}
	// GET is unchanged by it.
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$2\r\nv2\r\n", v2.String())

	expect(t, "no key", c.Request(dsstest.Cmd("KEYINFO")), errPayload(wire.ErrWrongArgs), "")
	expect(t, "two keys", c.Request(dsstest.Cmd("KEYINFO", "a", "b")), errPayload(wire.ErrWrongArgs), "")
	expect(t, "empty key", c.Request(dsstest.Cmd("KEYINFO", "")), errPayload(wire.ErrEmptyKey), "")

	// An expired key is missing, as for GET.
	expect(t, "short-lived", c.Set([]string{"brief", "x", "PX", "1"}), "+OK\r\n", "any")
	dsstest.Eventually(t, "the key expires", func() bool {
		return string(c.Request(dsstest.Cmd("KEYINFO", "brief")).Payload) == "$-1\r\n"
	})
}

package server_test

import (
	"testing"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// TestFencingTokens walks the lock scenario of the protocol article and
// the rules of PROTOCOL.md section 7.
func TestFencingTokens(t *testing.T) {
	s, client1 := start(t)
	client2 := dsstest.Dial(t, s.Addr(), "client2")

	// Client1 takes the lock; its version is the fencing token.
	token1 := expect(t, "acquire", client1.Set([]string{"LockName", "Client1", "NEX", "PX", "10000"}), "+OK\r\n", "any")
	expect(t, "contender", client2.Set([]string{"LockName", "Client2", "NEX", "PX", "10000"}), ":-1\r\n", token1.String())

	// A SET with __ft on an unprotected key stores the token.
	expect(t, "protect", client1.Set([]string{"ProtectedKey", "a"}, ft(token1.String())), "+OK\r\n", "any")
	expect(t, "no token", client2.Set([]string{"ProtectedKey", "b"}), errPayload(wire.ErrFencingRequired), "")
	older := hlc.Timestamp{Wall: token1.Wall, Counter: token1.Counter, Node: token1.Node[:0]} // same time, smaller node id
	expect(t, "older token", client2.Set([]string{"ProtectedKey", "b"}, ft(older.String())), errPayload(wire.ErrFencingLower), "")
	expect(t, "equal token", client1.Set([]string{"ProtectedKey", "c"}, ft(token1.String())), "+OK\r\n", "any")

	// The lock passes to client2 (client1 released it); its newer token is
	// stored on the first write and locks client1 out.
	expect(t, "release", client1.Request(dsstest.Cmd("VDEL", "LockName", "Client1")), ":1\r\n", token1.String())
	token2 := expect(t, "acquire 2", client2.Set([]string{"LockName", "Client2", "NEX", "PX", "10000"}), "+OK\r\n", "any")
	expect(t, "newer token", client2.Set([]string{"ProtectedKey", "d"}, ft(token2.String())), "+OK\r\n", "any")
	expect(t, "stale holder", client1.Set([]string{"ProtectedKey", "e"}, ft(token1.String())), errPayload(wire.ErrFencingLower), "")
	expect(t, "value", client1.Request(dsstest.Cmd("GET", "ProtectedKey")), "$1\r\nd\r\n", "any")

	// DEL and VDEL follow the same rules but store nothing.
	expect(t, "DEL without token", client1.Request(dsstest.Cmd("DEL", "ProtectedKey")), errPayload(wire.ErrFencingRequired), "")
	expect(t, "VDEL with stale token", client1.Request(dsstest.Cmd("VDEL", "ProtectedKey", "d"), ft(token1.String())), errPayload(wire.ErrFencingLower), "")
	expect(t, "VDEL without token", client1.Request(dsstest.Cmd("VDEL", "ProtectedKey", "d")), errPayload(wire.ErrFencingRequired), "")
	expect(t, "DEL with token", client2.Request(dsstest.Cmd("DEL", "ProtectedKey"), ft(token2.String())), ":1\r\n", "any")

	// The token went with the key.
	expect(t, "unprotected again", client1.Set([]string{"ProtectedKey", "f"}), "+OK\r\n", "any")
}

func TestFencingTokenOnMissingKeyDeletes(t *testing.T) {
	_, c := start(t)
	expect(t, "DEL with token", c.Request(dsstest.Cmd("DEL", "nothing"), ft(dsstest.Now())), ":0\r\n", "")
	expect(t, "VDEL with token", c.Request(dsstest.Cmd("VDEL", "nothing", "v"), ft(dsstest.Now())), ":0\r\n", "")
}

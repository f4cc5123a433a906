package server_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
)

func TestSetGetDel(t *testing.T) {
	_, c := start(t)
	v1 := expect(t, "SET", c.Set([]string{"k", "v1"}), "+OK\r\n", "any")
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$2\r\nv1\r\n", v1.String())
	expect(t, "GET miss", c.Request(dsstest.Cmd("GET", "missing")), "$-1\r\n", "")
	v2 := expect(t, "SET again", c.Set([]string{"k", "v2"}), "+OK\r\n", "any")
	if !v1.Before(v2) {
		t.Fatalf("second version %v not after first %v", v2, v1)
	}
	expect(t, "DEL", c.Request(dsstest.Cmd("DEL", "k")), ":1\r\n", v2.String())
	expect(t, "GET after DEL", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
	expect(t, "DEL miss", c.Request(dsstest.Cmd("DEL", "k")), ":0\r\n", "")
}

func TestLowerCaseVerbsAndOptions(t *testing.T) {
	_, c := start(t)
	expect(t, "set", c.Request(dsstest.Cmd("set", "SETKEY2", "VALUE5", "nx", "px", "60000"), ts(dsstest.Now())), "+OK\r\n", "any")
	expect(t, "get", c.Request(dsstest.Cmd("get", "SETKEY2")), "$6\r\nVALUE5\r\n", "any")
	expect(t, "vdel", c.Request(dsstest.Cmd("vdel", "SETKEY2", "ABC")), ":-1\r\n", "any")
	expect(t, "Del", c.Request(dsstest.Cmd("Del", "SETKEY2")), ":1\r\n", "any")
}

func TestTheArticlesExamplePayloads(t *testing.T) {
	_, c := start(t)
	crlf := func(s string) []byte { return []byte(strings.ReplaceAll(s, "<CR><LF>", "\r\n")) }
	expect(t, "set", c.Request(crlf("*3<CR><LF>$3<CR><LF>set<CR><LF>$7<CR><LF>SETKEY2<CR><LF>$6<CR><LF>VALUE5<CR><LF>"), ts(dsstest.Now())), "+OK\r\n", "any")
	expect(t, "get", c.Request(crlf("*2<CR><LF>$3<CR><LF>get<CR><LF>$7<CR><LF>SETKEY2<CR><LF>")), "$6\r\nVALUE5\r\n", "any")
	expect(t, "vdel", c.Request(crlf("*3<CR><LF>$4<CR><LF>vdel<CR><LF>$7<CR><LF>SETKEY2<CR><LF>$3<CR><LF>ABC<CR><LF>")), ":-1\r\n", "any")
	expect(t, "del", c.Request(crlf("*2<CR><LF>$3<CR><LF>del<CR><LF>$7<CR><LF>SETKEY2<CR><LF>")), ":1\r\n", "any")
}

func TestBinarySafeKeysAndValues(t *testing.T) {
	_, c := start(t)
	key := "k\r\n\x00\xff*$"
	value := "\r\n\x00\xff-ERR\r\n$-1\r\n"
	v := expect(t, "SET", c.Set([]string{key, value}), "+OK\r\n", "any")
	expect(t, "GET", c.Request(dsstest.Cmd("GET", key)), "$15\r\n"+value+"\r\n", v.String())
	expect(t, "GET of a prefix", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
	expect(t, "VDEL", c.Request(dsstest.Cmd("VDEL", key, value)), ":1\r\n", v.String())
}

func TestEmptyValueExists(t *testing.T) {
	_, c := start(t)
	v := expect(t, "SET", c.Set([]string{"k", ""}), "+OK\r\n", "any")
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$0\r\n\r\n", v.String())
}

func TestLargeValue(t *testing.T) {
	_, c := start(t)
	value := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16) // 5 MiB
	v := expect(t, "SET", c.Set([]string{"big", string(value)}), "+OK\r\n", "any")
	p := c.Request(dsstest.Cmd("GET", "big"))
	want := append(append([]byte("$5242880\r\n"), value...), "\r\n"...)
	if !bytes.Equal(p.Payload, want) {
		t.Fatalf("GET of a 5 MiB value returned %d bytes, want %d", len(p.Payload), len(want))
	}
	expect(t, "DEL", c.Request(dsstest.Cmd("DEL", "big")), ":1\r\n", v.String())
}

func TestSetNX(t *testing.T) {
	_, c := start(t)
	v := expect(t, "SET NX new", c.Set([]string{"k", "a", "NX"}), "+OK\r\n", "any")
	expect(t, "SET NX existing", c.Set([]string{"k", "b", "NX"}), ":-1\r\n", v.String())
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$1\r\na\r\n", v.String())
}

func TestSetNEX(t *testing.T) {
	_, c := start(t)
	v1 := expect(t, "SET NEX new", c.Set([]string{"lock", "me", "NEX", "PX", "10000"}), "+OK\r\n", "any")
	v2 := expect(t, "SET NEX same value", c.Set([]string{"lock", "me", "NEX", "PX", "10000"}), "+OK\r\n", "any")
	if !v1.Before(v2) {
		t.Fatalf("renewal version %v not after %v", v2, v1)
	}
	expect(t, "SET NEX other value", c.Set([]string{"lock", "you", "NEX", "PX", "10000"}), ":-1\r\n", v2.String())
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "lock")), "$2\r\nme\r\n", v2.String())
}

func TestSetOptionsInAnyOrder(t *testing.T) {
	_, c := start(t)
	for i, opts := range [][]string{
		{"NX", "PX", "60000"},
		{"PX", "60000", "NX"},
		{"NEX", "PX", "60000"},
		{"PX", "60000", "NEX"},
		{"PX", "60000"},
	} {
		key := "k" + string(rune('a'+i))
		expect(t, strings.Join(opts, " "), c.Set(append([]string{key, "v"}, opts...)), "+OK\r\n", "any")
	}
}

func TestVDel(t *testing.T) {
	_, c := start(t)
	expect(t, "VDEL missing", c.Request(dsstest.Cmd("VDEL", "k", "v")), ":0\r\n", "")
	v := expect(t, "SET", c.Set([]string{"k", "v"}), "+OK\r\n", "any")
	expect(t, "VDEL mismatch", c.Request(dsstest.Cmd("VDEL", "k", "w")), ":-1\r\n", v.String())
	expect(t, "GET after mismatch", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", v.String())
	expect(t, "VDEL match", c.Request(dsstest.Cmd("VDEL", "k", "v")), ":1\r\n", v.String())
	expect(t, "GET after VDEL", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
}

func TestRequestsWithoutTimestampOnGetDelVDel(t *testing.T) {
	// Only SET needs __ts.
	_, c := start(t)
	c.Set([]string{"k", "v"})
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
	expect(t, "VDEL", c.Request(dsstest.Cmd("VDEL", "k", "x")), ":-1\r\n", "any")
	expect(t, "DEL", c.Request(dsstest.Cmd("DEL", "k")), ":1\r\n", "any")
}

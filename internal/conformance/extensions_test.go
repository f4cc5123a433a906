package conformance

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// The extensions beyond the article, through dss serve and through
// Mosquitto with dss attached alike: SCAN (PROTOCOL.md section 11),
// KEYINFO, dss-ttl on GET, and KEYNOTIFY of a pattern (docs/protocol.md).

// expectResponse checks a response's payload and its user properties,
// by name and in order.
func expectResponse(t *testing.T, what string, p *paho.Publish, payload, props string) {
	t.Helper()
	if string(p.Payload) != payload || propKeys(p) != props || p.QoS != 1 || p.Properties.ContentType != wire.ContentType {
		t.Fatalf("%s: %q with properties %s (QoS %d, content type %q); want %q with %s",
			what, p.Payload, propKeys(p), p.QoS, p.Properties.ContentType, payload, props)
	}
}

// setAll writes the keys, pipelined, and waits for every answer.
func setAll(t *testing.T, c *dsstest.Client, keys []string) {
	t.Helper()
	waits := make([]chan *paho.Publish, len(keys))
	for i, k := range keys {
		waits[i] = c.Send(dsstest.Cmd("SET", k, "v"), paho.UserProperty{Key: wire.PropTimestamp, Value: dsstest.Now()})
	}
	for i, w := range waits {
		if p := c.Await(w); string(p.Payload) != "+OK\r\n" {
			t.Fatalf("SET %q: %q", keys[i], p.Payload)
		}
	}
}

// scanAll lists the keys of pattern page by page, as the vendor's
// client reads the pages, and returns them with the number of pages.
func scanAll(t *testing.T, c *dsstest.Client, pattern string) (keys []string, pages int) {
	t.Helper()
	var token []byte
	for {
		args := [][]byte{[]byte("SCAN"), []byte(pattern)}
		if token != nil {
			args = append(args, token)
		}
		p := c.Request(resp.AppendArray(nil, args...))
		if propKeys(p) != "__stat,__protVer" {
			t.Fatalf("SCAN %q: user properties %s", pattern, propKeys(p))
		}
		raw, tok, more, err := resp.ParseScanPage(p.Payload)
		if err != nil {
			t.Fatalf("SCAN %q: %.80q: %v", pattern, p.Payload, err)
		}
		pages++
		for _, k := range raw {
			keys = append(keys, string(k))
		}
		if !more {
			slices.Sort(keys)
			return keys, pages
		}
		if pages > 10000 {
			t.Fatalf("SCAN %q: no end after %d pages", pattern, pages)
		}
		token = append([]byte{}, tok...)
	}
}

func TestStateStoreScan(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string) {
		c := dsstest.Dial(t, addr, "scanner")
		const noVersion = "__stat,__protVer"
		expectResponse(t, "SCAN of an empty store", c.Request([]byte("*2\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n")), "*1\r\n*0\r\n", noVersion)
		c.Set([]string{"key1", "v"})
		c.Set([]string{"other", "v"})
		expectResponse(t, "SCAN key*", c.Request([]byte("*2\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n")), "*1\r\n*1\r\n$4\r\nkey1\r\n", noVersion)
		expectResponse(t, "scan in lower case", c.Request([]byte("*2\r\n$4\r\nscan\r\n$2\r\nk*\r\n")), "*1\r\n*1\r\n$4\r\nkey1\r\n", noVersion)
		expectResponse(t, "SCAN of an empty pattern", c.Request(dsstest.Cmd("SCAN", "")), "*1\r\n*0\r\n", noVersion)
		expectResponse(t, "SCAN without a pattern", c.Request(dsstest.Cmd("SCAN")), errText(wire.ErrWrongArgs), noVersion)
		expectResponse(t, "SCAN with four arguments", c.Request(dsstest.Cmd("SCAN", "*", "t", "x")), errText(wire.ErrWrongArgs), noVersion)
		expectResponse(t, "KEYS is no verb", c.Request(dsstest.Cmd("KEYS", "*")), errText(wire.ErrUnknownCommand), noVersion)
		for _, tok := range []string{"\x00\xffx", "1;1;", "1;2;12345678"} {
			expectResponse(t, fmt.Sprintf("SCAN with token %q", tok),
				c.Request([]byte("*3\r\n$4\r\nSCAN\r\n$1\r\n*\r\n$"+strconv.Itoa(len(tok))+"\r\n"+tok+"\r\n")),
				errText(wire.ErrBadScanToken), noVersion)
		}

		// Enough keys for several pages: the first answers *2 with a
		// token, and the pages list every key once.
		keys := make([]string, 3000)
		for i := range keys {
			keys[i] = fmt.Sprintf("key/%04d", i)
		}
		setAll(t, c, keys)
		p := c.Request(dsstest.Cmd("SCAN", "key/*"))
		_, tok, more, err := resp.ParseScanPage(p.Payload)
		if !bytes.HasPrefix(p.Payload, []byte("*2\r\n*")) || err != nil || !more || !bytes.HasPrefix(tok, []byte("1;")) {
			t.Fatalf("the first page of 3,000 keys: %.40q, token %q, %v", p.Payload, tok, err)
		}
		got, pages := scanAll(t, c, "key/*")
		if !slices.Equal(got, keys) || pages < 2 {
			t.Fatalf("key/* lists %d keys in %d pages, want the 3,000 in several", len(got), pages)
		}
		// Binary keys: UTF-8 ones are listed as they are, others never.
		c.Set([]string{"bin\x00\r\n", "v"})
		c.Set([]string{"bad\xff", "v"})
		if got, _ := scanAll(t, c, "b*"); !slices.Equal(got, []string{"bin\x00\r\n"}) {
			t.Fatalf("SCAN b* lists %q", got)
		}
	})
}

func TestStateStoreKeyInfo(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string) {
		c := dsstest.Dial(t, addr, "keyinfo")
		expectResponse(t, "KEYINFO of a missing key", c.Request(dsstest.Cmd("KEYINFO", "k")), "$-1\r\n", "__stat,__protVer")
		set := c.Set([]string{"k", "v\r\n1"})
		ts, _ := dsstest.UserProperty(set, wire.PropTimestamp)
		p := c.Request(dsstest.Cmd("KEYINFO", "k"))
		expectResponse(t, "KEYINFO", p, "*3\r\n$4\r\nv\r\n1\r\n$2\r\n-1\r\n$0\r\n\r\n", "__stat,__protVer,__ts")
		if v, _ := dsstest.UserProperty(p, wire.PropTimestamp); v != ts {
			t.Fatalf("KEYINFO __ts %s, want the SET's %s", v, ts)
		}
		lock := c.Set([]string{"lock", "me", "NX", "PX", "60000"})
		token, _ := dsstest.UserProperty(lock, wire.PropTimestamp)
		c.Set([]string{"k", "v2", "PX", "30000"}, paho.UserProperty{Key: wire.PropFencingToken, Value: token})
		r, err := resp.ParseReply(c.Request(dsstest.Cmd("keyinfo", "k")).Payload)
		if err != nil || r.Kind != resp.KindArray || len(r.Elems) != 3 {
			t.Fatalf("KEYINFO of a fenced key: %v %v", r, err)
		}
		ttl, err := strconv.ParseInt(string(r.Elems[1]), 10, 64)
		if string(r.Elems[0]) != "v2" || err != nil || ttl < 1 || ttl > 30000 || string(r.Elems[2]) != token {
			t.Fatalf("KEYINFO: %q, %q, %q; want v2, up to 30000 ms and the token %s", r.Elems[0], r.Elems[1], r.Elems[2], token)
		}
		expectResponse(t, "KEYINFO without a key", c.Request(dsstest.Cmd("KEYINFO")), errText(wire.ErrWrongArgs), "__stat,__protVer")
	})
}

// A GET that asks with dss-ttl: true is told the time its key has left,
// as the last user property; one that does not ask gets the response it
// always got.
func TestStateStoreGetWithTTL(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string) {
		c := dsstest.Dial(t, addr, "ttl")
		ask := paho.UserProperty{Key: wire.PropTTL, Value: "true"}
		c.Set([]string{"expiring", "v", "PX", "60000"})
		c.Set([]string{"lasting", "v"})
		p := c.Request(dsstest.Cmd("GET", "expiring"), ask)
		expectResponse(t, "GET asking for the TTL", p, "$1\r\nv\r\n", "__stat,__protVer,__ts,dss-ttl")
		v, _ := dsstest.UserProperty(p, wire.PropTTL)
		if ms, err := strconv.ParseInt(v, 10, 64); err != nil || ms <= 0 || ms > 60000 {
			t.Fatalf("dss-ttl %q of a key with PX 60000", v)
		}
		expectResponse(t, "GET not asking", c.Request(dsstest.Cmd("GET", "expiring")), "$1\r\nv\r\n", "__stat,__protVer,__ts")
		expectResponse(t, "GET of a key without expiry", c.Request(dsstest.Cmd("GET", "lasting"), ask), "$1\r\nv\r\n", "__stat,__protVer,__ts")
		expectResponse(t, "GET of a missing key", c.Request(dsstest.Cmd("GET", "missing"), ask), "$-1\r\n", "__stat,__protVer")
	})
}

// expectNotification checks the next notification w receives: its
// topic, payload and properties, byte for byte, and returns its version.
func expectNotification(t *testing.T, w *dsstest.Client, key, payload string) hlc.Timestamp {
	t.Helper()
	n := w.Next()
	topic := "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/" + strings.ToUpper(hex.EncodeToString([]byte(w.ID))) +
		"/command/notify/" + strings.ToUpper(hex.EncodeToString([]byte(key)))
	if n.Topic != topic || string(n.Payload) != payload || propKeys(n) != "__ts" || n.Properties.ContentType != wire.ContentType {
		t.Fatalf("notification %q on %s with %s; want %q on %s with __ts", n.Payload, n.Topic, propKeys(n), payload, topic)
	}
	ts, _ := dsstest.UserProperty(n, wire.PropTimestamp)
	v, err := hlc.Parse(ts)
	if err != nil {
		t.Fatalf("notification __ts %q: %v", ts, err)
	}
	return v
}

func notifySet(v string) string {
	return "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
}

const notifyDelete = "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"

// KEYNOTIFY of a pattern: every SET and deletion of a matching key, as a
// registration for the key itself would tell it, once per change however
// many of the client's registrations match; STOP, and keys that are not
// UTF-8 never matching.
func TestStateStorePatternNotifications(t *testing.T) {
	forEachTarget(t, func(t *testing.T, addr string) {
		w := dsstest.Dial(t, addr, "pw")
		w.Subscribe(wire.NotifyTopicFilter(w.ID))
		other := dsstest.Dial(t, addr, "everything")
		other.Subscribe(wire.NotifyTopicFilter(other.ID))
		ok := func(c *dsstest.Client, args ...string) {
			t.Helper()
			expectResponse(t, strings.Join(args, " "), c.Request(dsstest.Cmd(args...)), "+OK\r\n", "__stat,__protVer")
		}
		ok(w, "KEYNOTIFY", "sensor/temp")
		ok(w, "KEYNOTIFY", "sensor/*", "PATTERN")
		ok(w, "keynotify", "sensor/t*", "pattern")
		ok(w, "KEYNOTIFY", "sensor/t*", "PATTERN") // again: one registration
		ok(other, "KEYNOTIFY", "*", "PATTERN")

		c := dsstest.Dial(t, addr, "writer")
		set := c.Set([]string{"sensor/temp", "21"})
		ts, _ := dsstest.UserProperty(set, wire.PropTimestamp)
		if v := expectNotification(t, w, "sensor/temp", notifySet("21")); v.String() != ts {
			t.Fatalf("notification __ts %s, want the SET's %s", v, ts)
		}
		expectNotification(t, other, "sensor/temp", notifySet("21"))
		c.Set([]string{"elsewhere", "1"})
		expectNotification(t, other, "elsewhere", notifySet("1"))
		// One notification per change: what w hears next is the next
		// change of a key it watches, not a copy of the first.
		c.Set([]string{"sensor/hum", "40"})
		expectNotification(t, w, "sensor/hum", notifySet("40"))
		c.Request(dsstest.Cmd("DEL", "sensor/temp"))
		expectNotification(t, w, "sensor/temp", notifyDelete)
		c.Set([]string{"sensor/\xff", "x"})
		c.Set([]string{"sensor/\x00\r\n", "y"})
		expectNotification(t, w, "sensor/\x00\r\n", notifySet("y"))
		c.Set([]string{"sensor/brief", "z", "PX", "1"})
		expectNotification(t, w, "sensor/brief", notifySet("z"))
		expectNotification(t, w, "sensor/brief", notifyDelete)

		expectResponse(t, "STOP", w.Request(dsstest.Cmd("KEYNOTIFY", "sensor/*", "PATTERN", "STOP")), "+OK\r\n", "__stat,__protVer")
		expectResponse(t, "STOP again", w.Request(dsstest.Cmd("KEYNOTIFY", "sensor/*", "PATTERN", "STOP")), ":0\r\n", "__stat,__protVer")
		expectResponse(t, "STOP PATTERN", w.Request(dsstest.Cmd("KEYNOTIFY", "sensor/t*", "STOP", "PATTERN")), "+OK\r\n", "__stat,__protVer")
		c.Set([]string{"sensor/wind", "3"}) // no longer watched by w
		c.Set([]string{"sensor/temp", "22"})
		expectNotification(t, w, "sensor/temp", notifySet("22"))
		w.NoMessage(200 * time.Millisecond)
	})
}

// The bound of registrations per client counts keys and patterns
// together.
func TestStateStorePatternRegistrationsCountTowardTheLimit(t *testing.T) {
	forEachTargetWith(t, server.Config{MaxWatchesPerClient: 2}, func(t *testing.T, addr string) {
		c := dsstest.Dial(t, addr, "limited")
		ok := "+OK\r\n"
		quota := errText(wire.ErrQuotaExceeded)
		for _, x := range []struct{ args, want string }{
			{"KEYNOTIFY k", ok},
			{"KEYNOTIFY a* PATTERN", ok},
			{"KEYNOTIFY b* PATTERN", quota},
			{"KEYNOTIFY j", quota},
			{"KEYNOTIFY a* PATTERN", ok}, // renewing is not a new one
			{"KEYNOTIFY a* PATTERN STOP", ok},
			{"KEYNOTIFY b* PATTERN", ok},
		} {
			expectResponse(t, x.args, c.Request(dsstest.Cmd(strings.Fields(x.args)...)), x.want, "__stat,__protVer")
		}
	})
}

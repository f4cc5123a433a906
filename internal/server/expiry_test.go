package server_test

import (
	"sort"

	"github.com/eclipse/paho.golang/paho"
	"strconv"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

func TestExpiredKeysAreMissingFromTheirDeadline(t *testing.T) {
	start := time.UnixMilli(1_800_000_000_000)
	clock := dsstest.NewClock(start)
	s := dsstest.StartServer(t, server.Config{Now: clock.Now})
	c := dsstest.Dial(t, s.Addr(), "c")
	at := func(d time.Duration) string {
		return tsAt(start.Add(d))
	}
	expect(t, "SET PX", c.Request(dsstest.Cmd("SET", "k", "v", "PX", "1000"), ts(at(0))), "+OK\r\n", "any")
	clock.Set(start.Add(999 * time.Millisecond))
	expect(t, "GET before the deadline", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
	clock.Set(start.Add(1000 * time.Millisecond))
	expect(t, "GET at the deadline", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
	expect(t, "VDEL at the deadline", c.Request(dsstest.Cmd("VDEL", "k", "v")), ":0\r\n", "")
	expect(t, "SET NX after the deadline", c.Request(dsstest.Cmd("SET", "k", "w", "NX"), ts(at(time.Second))), "+OK\r\n", "any")

	// A SET without PX removes the deadline; one with PX sets a new one.
	expect(t, "SET PX", c.Request(dsstest.Cmd("SET", "j", "v", "PX", "500"), ts(at(time.Second))), "+OK\r\n", "any")
	expect(t, "SET", c.Request(dsstest.Cmd("SET", "j", "v"), ts(at(time.Second))), "+OK\r\n", "any")
	clock.Set(start.Add(time.Hour))
	expect(t, "GET without deadline", c.Request(dsstest.Cmd("GET", "j")), "$1\r\nv\r\n", "any")
}

func tsAt(t time.Time) string {
	return strconv.FormatInt(t.UnixMilli(), 10) + ":0:client"
}

// TestExpiryNotifications lets thousands of keys expire at the same moment
// and checks that every watcher hears of each. The lateness of the
// notifications is logged; the 100 ms target is measured with dss bench,
// not asserted here.
func TestExpiryNotifications(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	writer := dsstest.Dial(t, s.Addr(), "writer")
	w := dsstest.Dial(t, s.Addr(), "w")
	w.Subscribe(wire.NotifyTopicFilter("w"))
	const n = 2000
	for i := 0; i < n; i++ {
		w.Send(dsstest.Cmd("KEYNOTIFY", "k"+strconv.Itoa(i)))
	}
	expect(t, "last KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", "sentinel")), "+OK\r\n", "")

	// Every key gets the same absolute deadline; its exact value follows
	// from the version the SET got (the server's clock when it applied it).
	target := time.Now().Add(2 * time.Second)
	deadlines := make(map[string]time.Time)
	var pending []chan *paho.Publish
	var pxs []int64
	for i := 0; i < n; i++ {
		px := max(time.Until(target).Milliseconds(), 1) // a slow machine may pass the target
		pxs = append(pxs, px)
		pending = append(pending, writer.Send(dsstest.Cmd("SET", "k"+strconv.Itoa(i), "v", "PX", strconv.FormatInt(px, 10)), ts(dsstest.Now())))
	}
	for i, ch := range pending {
		v := expect(t, "SET", writer.Await(ch), "+OK\r\n", "any")
		deadlines[wire.NotifyTopic("w", []byte("k"+strconv.Itoa(i)))] = time.UnixMilli(v.Wall + pxs[i])
	}
	var lateness []time.Duration
	for len(lateness) < n {
		p := w.Next()
		if string(p.Payload) != notifyDelete {
			continue // the SET notifications
		}
		d, ok := deadlines[p.Topic]
		if !ok {
			t.Fatalf("DELETE notification on %s", p.Topic)
		}
		delete(deadlines, p.Topic)
		lateness = append(lateness, time.Since(d))
	}
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	t.Logf("%d DELETE notifications received after their deadline: first %v, median %v, last %v",
		n, lateness[0], lateness[n/2], lateness[n-1])
	if lateness[0] < -time.Millisecond {
		t.Fatalf("a key expired %v before its deadline", -lateness[0])
	}
	expect(t, "GET expired", writer.Request(dsstest.Cmd("GET", "k0")), "$-1\r\n", "")
}

package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

func stop(t *testing.T, s *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	token := expect(t, "lock", c.Set([]string{"lock", "me", "NEX", "PX", "3600000"}), "+OK\r\n", "any")
	protected := expect(t, "protect", c.Set([]string{"protected", "p"}, ft(token.String())), "+OK\r\n", "any")
	plain := expect(t, "plain", c.Set([]string{"plain", "v\r\n\x00"}), "+OK\r\n", "any")
	expect(t, "gone", c.Set([]string{"gone", "x"}), "+OK\r\n", "any")
	expect(t, "del", c.Request(dsstest.Cmd("DEL", "gone")), ":1\r\n", "any")
	expect(t, "vdel-target", c.Set([]string{"vdel", "x"}), "+OK\r\n", "any")
	expect(t, "vdel", c.Request(dsstest.Cmd("VDEL", "vdel", "x")), ":1\r\n", "any")
	stop(t, s)

	s = dsstest.StartServer(t, cfg)
	c = dsstest.Dial(t, s.Addr(), "c")
	expect(t, "lock", c.Request(dsstest.Cmd("GET", "lock")), "$2\r\nme\r\n", token.String())
	expect(t, "protected", c.Request(dsstest.Cmd("GET", "protected")), "$1\r\np\r\n", protected.String())
	expect(t, "plain", c.Request(dsstest.Cmd("GET", "plain")), "$4\r\nv\r\n\x00\r\n", plain.String())
	expect(t, "gone", c.Request(dsstest.Cmd("GET", "gone")), "$-1\r\n", "")
	expect(t, "vdel", c.Request(dsstest.Cmd("GET", "vdel")), "$-1\r\n", "")
	// The fencing token survived with its key.
	expect(t, "no token", c.Set([]string{"protected", "q"}), errPayload(wire.ErrFencingRequired), "")
	older := hlc.Timestamp{Wall: token.Wall - 1, Node: token.Node}
	expect(t, "older token", c.Set([]string{"protected", "q"}, ft(older.String())), errPayload(wire.ErrFencingLower), "")
	// The expiry survived too: NEX by someone else is refused.
	expect(t, "contender", c.Set([]string{"lock", "you", "NEX", "PX", "1000"}), ":-1\r\n", token.String())
	// New versions are later than everything before the restart.
	next := expect(t, "new write", c.Set([]string{"plain", "w"}), "+OK\r\n", "any")
	for _, v := range []hlc.Timestamp{token, protected, plain} {
		if !v.Before(next) {
			t.Fatalf("version %v after restart not after %v", next, v)
		}
	}
}

func TestKeysThatExpiredWhileDownAreGone(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	clock := dsstest.NewClock(start)
	cfg := server.Config{DataDir: dir, Now: clock.Now}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	expect(t, "short", c.Request(dsstest.Cmd("SET", "short", "v", "PX", "5000"), ts(tsAt(start))), "+OK\r\n", "any")
	expect(t, "long", c.Request(dsstest.Cmd("SET", "long", "v", "PX", "3600000"), ts(tsAt(start))), "+OK\r\n", "any")
	stop(t, s)

	clock.Set(start.Add(time.Minute)) // the server was down for a minute
	s = dsstest.StartServer(t, cfg)
	w := dsstest.Dial(t, s.Addr(), "w")
	w.Subscribe(wire.NotifyTopicFilter("w"))
	expect(t, "KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", "short")), "+OK\r\n", "")
	expect(t, "short", w.Request(dsstest.Cmd("GET", "short")), "$-1\r\n", "")
	expect(t, "long", w.Request(dsstest.Cmd("GET", "long")), "$1\r\nv\r\n", "any")
	expect(t, "NX", w.Request(dsstest.Cmd("SET", "short", "new", "NX"), ts(tsAt(start.Add(time.Minute)))), "+OK\r\n", "any")
	// Only the new value is announced; no stale value shows up. The
	// expiry of the old one is announced too when the registration came
	// before the expiry sweep removed it (the sweep runs on its own
	// goroutine once the server starts).
	p := w.Next()
	if string(p.Payload) == "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n" {
		p = w.Next()
	}
	if string(p.Payload) != notifySet("new") {
		t.Fatalf("notification %q", p.Payload)
	}
}

func TestVersionsStayAheadWhenTheClockIsSetBack(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	clock := dsstest.NewClock(start)
	cfg := server.Config{DataDir: dir, Now: clock.Now}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	var last hlc.Timestamp
	for i := 0; i < 10; i++ {
		last = expect(t, "SET", c.Request(dsstest.Cmd("SET", fmt.Sprint("k", i), "v"), ts(tsAt(start))), "+OK\r\n", "any")
	}
	stop(t, s)

	clock.Set(start.Add(-time.Hour))
	s = dsstest.StartServer(t, cfg)
	c = dsstest.Dial(t, s.Addr(), "c")
	next := expect(t, "SET", c.Request(dsstest.Cmd("SET", "k0", "w"), ts(tsAt(start.Add(-time.Hour)))), "+OK\r\n", "any")
	if !last.Before(next) {
		t.Fatalf("after the clock went back an hour, version %v is not after %v", next, last)
	}
	// A key deleted now gets a deletion version later than before, too.
	expect(t, "DEL", c.Request(dsstest.Cmd("DEL", "k1")), ":1\r\n", "any")
}

func TestFlaggedPersistence(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir, Persistence: server.PersistFlagged}
	persist := paho.UserProperty{Key: wire.PropPersistence, Value: "true"}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	kept := expect(t, "kept", c.Set([]string{"kept", "a"}, persist), "+OK\r\n", "any")
	expect(t, "volatile", c.Set([]string{"volatile", "b"}), "+OK\r\n", "any")
	expect(t, "was kept", c.Set([]string{"overwritten", "c"}, persist), "+OK\r\n", "any")
	last := expect(t, "now volatile", c.Set([]string{"overwritten", "d"}), "+OK\r\n", "any")
	stop(t, s)

	s = dsstest.StartServer(t, cfg)
	c = dsstest.Dial(t, s.Addr(), "c")
	expect(t, "kept", c.Request(dsstest.Cmd("GET", "kept")), "$1\r\na\r\n", kept.String())
	expect(t, "volatile", c.Request(dsstest.Cmd("GET", "volatile")), "$-1\r\n", "")
	// The last write was volatile: no older, persisted value comes back.
	expect(t, "overwritten", c.Request(dsstest.Cmd("GET", "overwritten")), "$-1\r\n", "")
	next := expect(t, "SET", c.Set([]string{"x", "y"}), "+OK\r\n", "any")
	if !last.Before(next) {
		t.Fatalf("version %v after restart not after the volatile write's %v", next, last)
	}
}

func TestPersistAllIgnoresTheFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	expect(t, "SET", c.Set([]string{"k", "v"}, paho.UserProperty{Key: wire.PropPersistence, Value: "false"}), "+OK\r\n", "any")
	stop(t, s)
	s = dsstest.StartServer(t, cfg)
	c = dsstest.Dial(t, s.Addr(), "c")
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
}

func TestSnapshotsWhileServing(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir, SnapshotAfter: 16 << 10}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	want := map[string]string{}
	var pending []chan *paho.Publish
	snapshots := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
		return m
	}
	var first []string
	for i := 0; i < 3000; i++ {
		k, v := fmt.Sprint("k", i%500), fmt.Sprint("value-", i)
		want[k] = v
		pending = append(pending, c.Send(dsstest.Cmd("SET", k, v), ts(dsstest.Now())))
		if i%100 == 99 {
			for _, ch := range pending {
				c.Await(ch)
			}
			pending = pending[:0]
		}
		if i == 1499 {
			// Half the writes are in: the journal is past SnapshotAfter,
			// and the rest is written after a snapshot was taken.
			dsstest.Eventually(t, "a snapshot exists", func() bool {
				first = snapshots()
				return len(first) > 0
			})
		}
	}
	dsstest.Eventually(t, "a snapshot of the later writes replaces the first", func() bool {
		m := snapshots()
		return len(m) > 0 && !slices.Equal(m, first)
	})
	stop(t, s)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if len(segs) > 2 {
		t.Fatalf("the journal was not compacted: %d segments", len(segs))
	}
	s = dsstest.StartServer(t, cfg)
	c = dsstest.Dial(t, s.Addr(), "c")
	for k, v := range want {
		expect(t, "GET "+k, c.Request(dsstest.Cmd("GET", k)), fmt.Sprintf("$%d\r\n%s\r\n", len(v), v), "any")
	}
}

func TestDataDirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	dsstest.StartServer(t, server.Config{DataDir: dir})
	if _, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: dsstest.Logger()}); err == nil {
		t.Fatal("a second server opened a data directory in use")
	}
}

func TestDamagedJournalStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	for i := 0; i < 50; i++ {
		c.Set([]string{fmt.Sprint("k", i), "v"})
	}
	stop(t, s)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	data, _ := os.ReadFile(segs[0])
	data[len(data)/2] ^= 0xff
	os.WriteFile(segs[0], data, 0o644)
	_, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: dsstest.Logger()})
	if err == nil {
		t.Fatal("a server started on a damaged journal")
	}
	t.Logf("start refused: %v", err)
}

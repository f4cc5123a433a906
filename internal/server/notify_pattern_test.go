package server_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// watchPattern registers c for pattern.
func watchPattern(t *testing.T, c *dsstest.Client, pattern string) {
	t.Helper()
	expect(t, "KEYNOTIFY "+pattern+" PATTERN", c.Request(dsstest.Cmd("KEYNOTIFY", pattern, "PATTERN")), "+OK\r\n", "")
}

// TestPatternNotifications: a client registered for a pattern hears of
// every SET and deletion of a matching key, exactly as an exact-key
// registration would tell it, and once however many of its registrations
// match; keys that are not UTF-8 never match.
func TestPatternNotifications(t *testing.T) {
	s, writer := start(t)
	w := watcher(t, s, "w", "sensor/temp")
	watchPattern(t, w, "sensor/*")
	watchPattern(t, w, "sensor/t*")
	watchPattern(t, w, "sensor/t*") // again: +OK, still one registration
	other := watcher(t, s, "other")
	watchPattern(t, other, "*")

	v := expect(t, "SET", writer.Set([]string{"sensor/temp", "21"}), "+OK\r\n", "any")
	expectNotification(t, w, "sensor/temp", notifySet("21"), v.String())
	expectNotification(t, other, "sensor/temp", notifySet("21"), v.String())
	writer.Set([]string{"elsewhere", "1"})
	expectNotification(t, other, "elsewhere", notifySet("1"), "any")
	// One notification per change: the next one w hears is the next
	// change of a key it watches, not a copy.
	writer.Set([]string{"sensor/hum", "40"})
	expectNotification(t, w, "sensor/hum", notifySet("40"), "any")
	expect(t, "DEL", writer.Request(dsstest.Cmd("DEL", "sensor/temp")), ":1\r\n", "any")
	expectNotification(t, w, "sensor/temp", notifyDelete, "any")

	// Binary keys: UTF-8 ones match (with their topic in hex), others
	// never do.
	writer.Set([]string{"sensor/\xff", "x"})
	writer.Set([]string{"sensor/\x00\r\n", "y"})
	expectNotification(t, w, "sensor/\x00\r\n", notifySet("y"), "any")

	// Expiry is a deletion too.
	writer.Set([]string{"sensor/brief", "z", "PX", "1"})
	expectNotification(t, w, "sensor/brief", notifySet("z"), "any")
	expectNotification(t, w, "sensor/brief", notifyDelete, "any")

	// STOP: +OK for a registration, :0 without one; the others stay.
	expect(t, "STOP", w.Request(dsstest.Cmd("KEYNOTIFY", "sensor/*", "PATTERN", "STOP")), "+OK\r\n", "")
	expect(t, "STOP again", w.Request(dsstest.Cmd("KEYNOTIFY", "sensor/*", "PATTERN", "STOP")), ":0\r\n", "")
	expect(t, "STOP PATTERN", w.Request(dsstest.Cmd("KEYNOTIFY", "sensor/t*", "STOP", "PATTERN")), "+OK\r\n", "")
	writer.Set([]string{"sensor/wind", "3"}) // no longer watched by w
	writer.Set([]string{"sensor/temp", "22"})
	expectNotification(t, w, "sensor/temp", notifySet("22"), "any")
}

// TestPatternRegistrationsCountTowardTheLimit: the per-connection limit
// counts keys and patterns together.
func TestPatternRegistrationsCountTowardTheLimit(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxWatchesPerClient: 2})
	c := dsstest.Dial(t, s.Addr(), "c")
	expect(t, "a key", c.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")
	watchPattern(t, c, "a*")
	expect(t, "a third", c.Request(dsstest.Cmd("KEYNOTIFY", "b*", "PATTERN")), errPayload(wire.ErrQuotaExceeded), "")
	expect(t, "a third key", c.Request(dsstest.Cmd("KEYNOTIFY", "j")), errPayload(wire.ErrQuotaExceeded), "")
	expect(t, "STOP", c.Request(dsstest.Cmd("KEYNOTIFY", "a*", "PATTERN", "STOP")), "+OK\r\n", "")
	watchPattern(t, c, "b*")
}

// TestPatternRegistrationsEndWithTheConnection: a client that comes back
// hears nothing until it registers again.
func TestPatternRegistrationsEndWithTheConnection(t *testing.T) {
	s, writer := start(t)
	w := watcher(t, s, "w")
	watchPattern(t, w, "k*")
	_ = w.Paho.Disconnect(&paho.Disconnect{})

	again := watcher(t, s, "w")
	writer.Set([]string{"k1", "v"})
	expect(t, "a key", again.Request(dsstest.Cmd("KEYNOTIFY", "j")), "+OK\r\n", "")
	writer.Set([]string{"j", "v"})
	// The first notification is j's: k1's change found no registration.
	expectNotification(t, again, "j", notifySet("v"), "any")
	watchPattern(t, again, "k*")
	writer.Set([]string{"k2", "v"})
	expectNotification(t, again, "k2", notifySet("v"), "any")
}

// TestPatternNotificationsUnderAPolicy: a pattern needs no grant, and
// hears only of the keys its client may read.
func TestPatternNotificationsUnderAPolicy(t *testing.T) {
	f := newAttackFixture(t)
	alice := f.dial(t, "alice-1", "alice")
	alice.Subscribe(wire.NotifyTopicFilter("alice-1"))
	bob := f.dial(t, "bob-1", "bob")
	watchPattern(t, alice, "*")
	watchPattern(t, alice, "app/*")
	expect(t, "bob's SET", bob.Set([]string{"app/bob/y", "2"}), "+OK\r\n", "any")
	expect(t, "alice's SET", alice.Set([]string{"app/alice/x", "1"}), "+OK\r\n", "any")
	// The first notification alice hears is of her own key.
	expectNotification(t, alice, "app/alice/x", notifySet("1"), "any")
	mallory := f.dial(t, "mallory-1", "mallory")
	mallory.Subscribe(wire.NotifyTopicFilter("mallory-1"))
	watchPattern(t, mallory, "*")
	expect(t, "bob's SET", bob.Set([]string{"app/bob/z", "3"}), "+OK\r\n", "any")
	expect(t, "alice's SET", alice.Set([]string{"app/alice/x", "4"}), "+OK\r\n", "any")
	expectNotification(t, alice, "app/alice/x", notifySet("4"), "any")
	// Both changes were delivered by now: mallory, who may read only
	// "public", heard of neither.
	mallory.NoMessage(100 * time.Millisecond)
}

// TestPatternNotificationsFollowAPolicyChange: a pattern's notifications
// leave out the keys its client may not read by the grants in force when
// the key changes, not those of its registration.
func TestPatternNotificationsFollowAPolicyChange(t *testing.T) {
	f := newAttackFixture(t)
	bob := f.dial(t, "bob-1", "bob")
	mallory := f.dial(t, "mallory-1", "mallory")
	mallory.Subscribe(wire.NotifyTopicFilter("mallory-1"))
	watchPattern(t, mallory, "*")
	expect(t, "bob's SET", bob.Set([]string{"app/bob/v", "1"}), "+OK\r\n", "any")

	// mallory may read bob's keys from now on.
	const from = `      - method: Read
        keyType: String
        keys: ["public"]
`
	if !strings.Contains(attackPolicy, from) {
		t.Fatal("the policy has changed: mallory's grant is not where the test looks")
	}
	wider := strings.Replace(attackPolicy, from, from+`      - method: Read
        keyType: Pattern
        keys: ["app/bob/*"]
`, 1)
	if err := os.WriteFile(f.policy, []byte(wider), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Reload(); err != nil {
		t.Fatal(err)
	}
	expect(t, "bob's SET", bob.Set([]string{"app/bob/w", "3"}), "+OK\r\n", "any")
	// The first notification mallory hears is of the change after the
	// policy's: the one before it stays unheard.
	expectNotification(t, mallory, "app/bob/w", notifySet("3"), "any")
}

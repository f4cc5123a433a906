package client

import (
	"errors"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestWatchPatternSurvivesServerRestart restarts the server under pattern
// watches: the client reconnects to the same address, registers each
// pattern again on the new server, tells every watch with an OpMissed
// event that changes may have been lost, and then reports the new
// server's changes, each once.
func TestWatchPatternSurvivesServerRestart(t *testing.T) {
	addr := freeAddr(t)
	s1 := startAt(t, addr)
	c := dial(t, addr)
	sensors, err := c.WatchPattern(ctxT(t), "sensor/*")
	if err != nil {
		t.Fatal(err)
	}
	defer sensors.Stop(ctxT(t))
	temps, err := c.WatchPattern(ctxT(t), "*/temp")
	if err != nil {
		t.Fatal(err)
	}
	defer temps.Stop(ctxT(t))
	mustSet(t, c, "sensor/temp", "before")
	expectEvent(t, nextEvent(t, sensors), "sensor/temp", OpSet, "before", false)
	expectEvent(t, nextEvent(t, temps), "sensor/temp", OpSet, "before", false)

	s1.stop()
	s2 := startAt(t, addr)

	expectEvent(t, nextEvent(t, sensors), "", OpMissed, "", true)
	expectEvent(t, nextEvent(t, temps), "", OpMissed, "", true)
	// Both patterns are registered on the new server: another client's
	// changes reach them, a key neither matches reaches neither.
	other := dial(t, s2.Addr())
	mustSet(t, other, "other/hum", "x")
	mustSet(t, other, "sensor/hum", "40")
	mustSet(t, other, "room/temp", "21")
	expectEvent(t, nextEvent(t, sensors), "sensor/hum", OpSet, "40", false)
	expectEvent(t, nextEvent(t, temps), "room/temp", OpSet, "21", false)
	if _, err := other.Del(ctxT(t), "sensor/hum"); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, nextEvent(t, sensors), "sensor/hum", OpDelete, "", false)
	mustSet(t, other, "sensor/temp", "22")
	expectEvent(t, nextEvent(t, sensors), "sensor/temp", OpSet, "22", false)
	expectEvent(t, nextEvent(t, temps), "sensor/temp", OpSet, "22", false)
}

// TestWatchPatternSurvivesCutConnection cuts the client's connection while
// the server stays up: the client connects again to the same server,
// registers the pattern on the new connection (the old connection's
// registration went with it), reports OpMissed, and then every change
// once.
func TestWatchPatternSurvivesCutConnection(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	p := startCutProxy(t, s.Addr(), "cut-me")
	c := dial(t, p.addr())
	w, err := c.WatchPattern(ctxT(t), "sensor/*")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	writer := dial(t, s.Addr())
	mustSet(t, writer, "sensor/a", "1")
	expectEvent(t, nextEvent(t, w), "sensor/a", OpSet, "1", false)

	if _, err := c.Set(ctxT(t), "cut-me", []byte("v")); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("Set on a cut connection: %v, want ErrConnectionLost", err)
	}
	expectEvent(t, nextEvent(t, w), "", OpMissed, "", true)
	// One event per change, in order: a registration left over from the
	// old connection, or made twice on the new one, would show as a
	// repeat before the next change.
	for _, v := range []string{"2", "3", "4"} {
		mustSet(t, writer, "sensor/a", v)
	}
	for _, v := range []string{"2", "3", "4"} {
		expectEvent(t, nextEvent(t, w), "sensor/a", OpSet, v, false)
	}
	mustSet(t, writer, "sensor/last", "x")
	expectEvent(t, nextEvent(t, w), "sensor/last", OpSet, "x", false)
}

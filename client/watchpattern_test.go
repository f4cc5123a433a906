package client

import (
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestWatchPattern(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	writer := dial(t, s.Addr())
	w, err := c.WatchPattern(ctxT(t), "sensor/*")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	exact, err := c.Watch(ctxT(t), []string{"sensor/temp"})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Stop(ctxT(t))
	same, err := c.WatchPattern(ctxT(t), "sensor/*")
	if err != nil {
		t.Fatal(err)
	}

	mustSet(t, writer, "other", "x")
	mustSet(t, writer, "sensor/temp", "21")
	// Each watch hears the change once.
	expectEvent(t, nextEvent(t, w), "sensor/temp", OpSet, "21", false)
	expectEvent(t, nextEvent(t, exact), "sensor/temp", OpSet, "21", false)
	expectEvent(t, nextEvent(t, same), "sensor/temp", OpSet, "21", false)
	mustSet(t, writer, "sensor/\x00bin", "b", TTL(20*time.Millisecond))
	expectEvent(t, nextEvent(t, w), "sensor/\x00bin", OpSet, "b", false)
	expectEvent(t, nextEvent(t, w), "sensor/\x00bin", OpDelete, "", false) // expiry

	// Stopping one of two watches of a pattern keeps the registration.
	if err := same.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	mustSet(t, writer, "sensor/hum", "40")
	expectEvent(t, nextEvent(t, w), "sensor/hum", OpSet, "40", false)
	if w.Pattern() != "sensor/*" || len(w.Keys()) != 0 {
		t.Fatalf("pattern %q keys %q", w.Pattern(), w.Keys())
	}
	if _, err := c.WatchPattern(ctxT(t), "x*", InitialState); err == nil {
		t.Fatal("InitialState accepted for a pattern")
	}
}

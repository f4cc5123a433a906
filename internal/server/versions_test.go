package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

func TestVersionsIncreaseAndExceedTheRequest(t *testing.T) {
	s, c := start(t)
	// A single node stamps its own id; a cluster the leader's.
	stamp := "test"
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if st, ok, err := s.ClusterStatus(ctx); ok && err == nil {
		stamp = st.Leader
	}
	var last hlc.Timestamp
	for i := 0; i < 50; i++ {
		reqTs := hlc.Timestamp{Wall: time.Now().UnixMilli(), Counter: uint32(i), Node: "client"}
		got := expect(t, "SET", c.Request(dsstest.Cmd("SET", "k", "v"), ts(reqTs.String())), "+OK\r\n", "any")
		if !reqTs.Before(got) {
			t.Fatalf("version %v not after the request's __ts %v", got, reqTs)
		}
		if !last.Before(got) {
			t.Fatalf("version %v not after the previous %v", got, last)
		}
		if got.Node != stamp {
			t.Fatalf("version %v not stamped with the node id %q", got, stamp)
		}
		last = got
	}
	// DEL and VDEL changes get versions of their own too: a SET after
	// them is later still.
	c.Request(dsstest.Cmd("DEL", "k"))
	got := expect(t, "SET", c.Set([]string{"k", "v"}), "+OK\r\n", "any")
	if !last.Before(got) {
		t.Fatalf("version %v after DEL not after %v", got, last)
	}
}

func TestTimestampAheadWithinSkewIsAccepted(t *testing.T) {
	_, c := start(t)
	ahead := hlc.Timestamp{Wall: time.Now().Add(30 * time.Second).UnixMilli(), Counter: 7, Node: "client"}
	got := expect(t, "SET", c.Request(dsstest.Cmd("SET", "k", "v"), ts(ahead.String())), "+OK\r\n", "any")
	if !ahead.Before(got) {
		t.Fatalf("version %v not after the request's %v", got, ahead)
	}
	// The clock moved with it: later versions stay ahead too.
	next := expect(t, "SET", c.Set([]string{"k", "w"}), "+OK\r\n", "any")
	if !got.Before(next) {
		t.Fatalf("version %v not after %v", next, got)
	}
}

func TestTimestampBehindTakesTheServerClock(t *testing.T) {
	_, c := start(t)
	behind := hlc.Timestamp{Wall: time.Now().Add(-time.Hour).UnixMilli(), Node: "client"}
	got := expect(t, "SET", c.Request(dsstest.Cmd("SET", "k", "v"), ts(behind.String())), "+OK\r\n", "any")
	if got.Wall < time.Now().Add(-time.Minute).UnixMilli() {
		t.Fatalf("version %v follows the old request clock, not the server's", got)
	}
}

func TestSkewLimitIsConfigurable(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxClockSkew: 5 * time.Second})
	c := dsstest.Dial(t, s.Addr(), "skew")
	expect(t, "10s ahead", c.Request(dsstest.Cmd("SET", "k", "v"), ts(future(10*time.Second))), errPayload(wire.ErrTimestampSkew), "")
	expect(t, "10s ahead fencing token", c.Request(dsstest.Cmd("SET", "k", "v"), ts(dsstest.Now()), ft(future(10*time.Second))), errPayload(wire.ErrFencingSkew), "")
	expect(t, "2s ahead", c.Request(dsstest.Cmd("SET", "k", "v"), ts(future(2*time.Second))), "+OK\r\n", "any")
}

func TestSkewIsMeasuredAgainstTheServerClock(t *testing.T) {
	clock := dsstest.NewClock(time.Now().Add(time.Hour))
	s := dsstest.StartServer(t, server.Config{Now: clock.Now})
	c := dsstest.Dial(t, s.Addr(), "clock")
	// 30 minutes ahead of the real clock is 30 minutes behind the server's.
	expect(t, "behind the server", c.Request(dsstest.Cmd("SET", "k", "v"), ts(future(30*time.Minute))), "+OK\r\n", "any")
	expect(t, "ahead of the server", c.Request(dsstest.Cmd("SET", "k", "v"), ts(future(62*time.Minute))), errPayload(wire.ErrTimestampSkew), "")
}

package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// The HTTP endpoint holds at most --http-max-connections: at the bound, a
// new connection takes the place of the one idle the longest, which is
// closed; idle ones are closed after --http-idle-timeout anyway.
func TestTheHTTPEndpointBoundsItsConnections(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", HTTPMaxConnections: 2, HTTPIdleTimeout: time.Minute})
	keepAlive := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", s.HTTPAddr(), dsstest.Timeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(dsstest.Timeout))
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: dss\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return c
	}
	first := keepAlive()
	time.Sleep(10 * time.Millisecond) // first is idle the longer
	second := keepAlive()

	// A third takes the first's place.
	if code, _ := dsstest.HTTPGet(t, s.HTTPAddr(), "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz at the bound: %d", code)
	}
	_ = first.SetReadDeadline(time.Now().Add(dsstest.Timeout))
	if n, err := first.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the connection idle the longest is still open: %d %v", n, err)
	}
	_ = second.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := second.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the connection idle the shorter was closed: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

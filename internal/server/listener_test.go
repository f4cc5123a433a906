package server_test

import (
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// exhaustedListener fails its Accepts while exhausted is set, as a
// listener out of file descriptors does.
type exhaustedListener struct {
	net.Listener
	exhausted atomic.Bool
}

func (l *exhaustedListener) Accept() (net.Conn, error) {
	if l.exhausted.Load() {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestHealthzReportsAListenerThatIsNotAccepting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	el := &exhaustedListener{Listener: ln}
	s := dsstest.StartServer(t, server.Config{Listener: el, HTTPListen: "127.0.0.1:0"})
	connected := dsstest.Dial(t, s.Addr(), "connected")
	if code, body := dsstest.HTTPGet(t, s.HTTPAddr(), "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz before: %d %q", code, body)
	}

	el.exhausted.Store(true)
	// The listener waits in an Accept that began before: one more
	// connection, and the next Accept fails.
	if conn, err := net.Dial("tcp", s.Addr()); err == nil {
		defer conn.Close()
	}
	dsstest.Eventually(t, "healthz reports the listener", func() bool {
		code, body := dsstest.HTTPGet(t, s.HTTPAddr(), "/healthz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "the MQTT listener is not accepting connections") &&
			strings.Contains(body, "too many open files")
	})
	if metric(t, s, "dss_mqtt_accept_errors_total 0") {
		t.Fatal("dss_mqtt_accept_errors_total is 0")
	}
	// New clients cannot get in: not ready either, so that a balancer
	// sends them elsewhere.
	if code, body := dsstest.HTTPGet(t, s.HTTPAddr(), "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: the MQTT listener is not accepting connections") {
		t.Fatalf("readyz while the listener fails: %d %q", code, body)
	}
	if !metric(t, s, "dss_ready 0") {
		t.Fatal("dss_ready is not 0 while the listener fails")
	}
	// Clients already connected are served meanwhile.
	expect(t, "SET", connected.Set([]string{"k", "v"}, ts(dsstest.Now())), "+OK\r\n", "any")

	el.exhausted.Store(false)
	c := dsstest.Dial(t, s.Addr(), "after") // the listener accepts again
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
	if code, body := dsstest.HTTPGet(t, s.HTTPAddr(), "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz after: %d %q", code, body)
	}
	if code, body := dsstest.HTTPGet(t, s.HTTPAddr(), "/readyz"); code != http.StatusOK {
		t.Fatalf("readyz after: %d %q", code, body)
	}
}

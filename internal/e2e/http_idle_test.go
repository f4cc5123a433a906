package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// idleHTTP opens a connection to addr, makes one keep-alive request on
// it and leaves it open; it returns the connection, or nil if the server
// did not answer within wait (the connection waits to be accepted).
func idleHTTP(addr string, wait time.Duration) net.Conn {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: dss\r\n\r\n"); err != nil {
		return c
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	_ = c.SetDeadline(time.Time{})
	return c
}

// TestIdleHTTPConnectionsCannotStarveTheMQTTListeners runs dss with a
// limit of 128 open files and keeps 200 HTTP connections open, each idle
// after one request: the HTTP endpoint takes at most
// --http-max-connections of them (the others wait to be accepted, and
// idle ones are closed to make room), so MQTT clients still connect and
// are served, /healthz answers, and the idle connections are closed
// after --http-idle-timeout. Idle keep-alive connections were never
// closed: 1,011 of them under a limit of 1,024 kept new MQTT clients out
// and made /healthz answer 503.
func TestIdleHTTPConnectionsCannotStarveTheMQTTListeners(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh to lower the descriptor limit of the server alone")
	}
	addr, httpAddr := freeAddr(t), freeAddr(t)
	p := runProcess(t, addr, exec.Command("sh", "-c", `ulimit -n 128 && exec "$0" "$@"`, dssBinary, "serve", "--listen", addr,
		"--http-listen", httpAddr, "--http-idle-timeout", "3s", "--in-memory"))
	dsstest.Eventually(t, "dss serves", func() bool { return strings.Contains(p.out.String(), "dss serving") })

	var mu sync.Mutex
	var idle []net.Conn
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c := idleHTTP(httpAddr, 2*time.Second); c != nil {
				mu.Lock()
				idle = append(idle, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() { closeAll(idle) })

	// Beside them, within a bound no starved listener would keep: an MQTT
	// client connects and is answered, and /healthz answers 200 (on a
	// connection of its own, which takes the place of an idle one).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := dial(ctx, addr, "legit")
	if err != nil {
		t.Fatalf("an MQTT client could not connect beside 200 idle HTTP connections: %v\n%s", err, p.out)
	}
	defer c.close()
	if r, err := c.do(ctx, []string{"SET", "k", "v"}, now()); err != nil || r.payload != "+OK\r\n" {
		t.Fatalf("SET beside the idle HTTP connections: %+v, %v", r, err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + httpAddr + "/healthz")
	if err != nil {
		t.Fatalf("healthz beside the idle HTTP connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz beside the idle HTTP connections: %d", resp.StatusCode)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the MQTT client and /healthz took %v beside the idle HTTP connections", took)
	}

	// The idle connections that were accepted are closed once idle for
	// --http-idle-timeout.
	mu.Lock()
	defer mu.Unlock()
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("an idle HTTP connection is still open 10 s after its request")
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

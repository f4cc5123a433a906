package e2e_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// TestTheListenerSurvivesRunningOutOfDescriptors runs dss with a limit of
// 64 open files and opens more connections than that: accepting fails
// for a while (logged once, counted), and once the connections are gone
// the server accepts and serves again. The broker library's listener
// used to return at its first accept error, for good.
func TestTheListenerSurvivesRunningOutOfDescriptors(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh to lower the descriptor limit of the server alone")
	}
	addr := freeAddr(t)
	// The hard limit as well: Go raises the soft limit to the hard one.
	p := runProcess(t, addr, exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, dssBinary, "serve", "--listen", addr,
		"--in-memory", "--read-loops", "-1", "--connect-timeout", "1m"))
	dsstest.Eventually(t, "dss listens", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	conns := exhaustDescriptors(t, p, addr)
	dsstest.Eventually(t, "the accept error is logged", func() bool {
		return strings.Contains(p.out.String(), "accepting connections failed; retrying")
	})
	if !strings.Contains(p.out.String(), "too many open files") {
		t.Fatalf("the log does not name the error:\n%s", p.out)
	}
	closeAll(conns)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var c *client
	dsstest.Eventually(t, "a client connects again", func() bool {
		var err error
		c, err = dial(ctx, addr, "after")
		return err == nil
	})
	defer c.close()
	if r, err := c.do(ctx, []string{"SET", "k", "v"}, now()); err != nil || r.payload != "+OK\r\n" {
		t.Fatalf("SET after the descriptors came back: %+v, %v", r, err)
	}
	for deadline := time.Now().Add(dsstest.Timeout); !strings.Contains(p.out.String(), "accepting connections again"); {
		if time.Now().After(deadline) {
			t.Fatalf("the end of the burst is not logged:\n%s", p.out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := strings.Count(p.out.String(), "accepting connections failed"); n != 1 {
		t.Fatalf("the burst was logged %d times:\n%s", n, p.out)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// TestTheTLSListenerOutOfDescriptorsIsNotReady: clients that come only
// to the TLS listener exhaust the descriptors there, and the plain
// listener, to which nobody comes, never fails an accept. /readyz says
// so all the same, naming the TLS listener, and is ready again once the
// descriptors are back. It is asked over a connection opened before:
// out of descriptors, the HTTP listener cannot accept either.
func TestTheTLSListenerOutOfDescriptorsIsNotReady(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh to lower the descriptor limit of the server alone")
	}
	ca := dsstest.NewCA(t, "e2e")
	cert := ca.Server("server")
	addr, tlsAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	p := runProcess(t, addr, exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, dssBinary, "serve", "--listen", addr,
		"--tls-listen", tlsAddr, "--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile, "--http-listen", httpAddr,
		"--in-memory", "--read-loops", "-1", "--connect-timeout", "1m"))
	dsstest.Eventually(t, "dss serves", func() bool { return strings.Contains(p.out.String(), "dss serving") })

	// One kept connection to the HTTP listener.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: dsstest.Timeout}
	defer hc.CloseIdleConnections()
	readyz := func() (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			t.Fatalf("readyz: %v\n%s", err, p.out)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	dsstest.Eventually(t, "ready", func() bool { code, _ := readyz(); return code == http.StatusOK })

	conns := exhaustDescriptors(t, p, tlsAddr)
	dsstest.Eventually(t, "the TLS listener's accept error is logged", func() bool {
		return strings.Contains(p.out.String(), "listener=tls error=")
	})
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "the MQTT TLS listener is not accepting connections") {
		t.Fatalf("readyz while the TLS listener fails: %d %q\n%s", code, body, p.out)
	}

	closeAll(conns)
	dsstest.Eventually(t, "ready again", func() bool { code, _ := readyz(); return code == http.StatusOK })
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// exhaustDescriptors connects to addr until the server p, which runs with
// a low descriptor limit, logs that accepting failed. The connections are
// closed when the test ends, if not before (closeAll).
func exhaustDescriptors(t *testing.T, p *process, addr string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for i := 0; i < 100 && !strings.Contains(p.out.String(), "accepting connections failed"); i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the backlog is full
		}
		conns = append(conns, c)
		// Paced, so that the server accepts each connection and runs out
		// of descriptors itself, rather than the backlog filling up.
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() { closeAll(conns) })
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

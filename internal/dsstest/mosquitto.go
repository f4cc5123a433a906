package dsstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/server"
)

// MosquittoPath returns the path of the mosquitto binary, or "" when it is
// not installed (scripts/install-test-deps.sh installs it).
func MosquittoPath() string {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// NeedMosquitto returns the mosquitto binary, or skips the test when it
// cannot be had: in CI (CI set), where scripts/install-test-deps.sh
// installs it, its absence fails the test instead.
func NeedMosquitto(t testing.TB) string {
	t.Helper()
	p := MosquittoPath()
	if p == "" {
		msg := "mosquitto is not installed: run scripts/install-test-deps.sh (Debian's package mosquitto) to test dss attach"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// Mosquitto is a Mosquitto broker that a test started, on a loopback port
// of its own. It is stopped when the test ends.
type Mosquitto struct {
	t    testing.TB
	bin  string
	conf string
	// Addr is the broker's address, the same across restarts.
	Addr string
	// Log collects the broker's log.
	Log *Buffer
	cmd *exec.Cmd
}

// MosquittoConfig is what a test adds to the broker's configuration:
// lines of mosquitto.conf (an ACL, a password file, persistence ...).
// Without them the broker admits anonymous clients and publishes its log
// on $SYS/broker/log/# (for dss attach --presence mosquitto).
type MosquittoConfig struct {
	Lines []string
	// Authenticated turns allow_anonymous off.
	Authenticated bool
}

// StartMosquitto starts Mosquitto with cfg, or skips the test when it
// cannot be had (NeedMosquitto).
func StartMosquitto(t testing.TB, cfg MosquittoConfig) *Mosquitto {
	t.Helper()
	bin := NeedMosquitto(t)
	dir := t.TempDir()
	addr := NodeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(dir, "mosquitto.conf")
	text := fmt.Sprintf("listener %s 127.0.0.1\nallow_anonymous %v\nlog_dest stderr\nlog_dest topic\nlog_type error\nlog_type warning\nlog_type notice\nlog_type information\nconnection_messages true\nmax_inflight_messages 0\nmax_queued_messages 0\nset_tcp_nodelay true\npersistence_location %s/\n",
		port, !cfg.Authenticated, dir)
	if os.Geteuid() == 0 {
		// Run as root, Mosquitto would become the user mosquitto, who
		// cannot read the test's files.
		text += "user root\n"
	}
	for _, l := range cfg.Lines {
		text += l + "\n"
	}
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Mosquitto{t: t, bin: bin, conf: conf, Addr: addr, Log: &Buffer{}}
	m.start()
	t.Cleanup(m.Stop)
	return m
}

func (m *Mosquitto) start() {
	m.t.Helper()
	cmd := exec.Command(m.bin, "-c", m.conf)
	cmd.Stdout, cmd.Stderr = m.Log, m.Log
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("start mosquitto: %v", err)
	}
	m.cmd = cmd
	deadline := time.Now().Add(Timeout)
	for {
		c, err := net.DialTimeout("tcp", m.Addr, time.Second)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			m.Stop()
			m.t.Fatalf("mosquitto does not listen on %s: %v\n%s", m.Addr, err, m.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// URL returns the broker's URL for dss attach.
func (m *Mosquitto) URL() string { return "mqtt://" + m.Addr }

// Stop stops the broker with SIGTERM (it saves its persistence file,
// when configured) and waits for it.
func (m *Mosquitto) Stop() { m.end(syscall.SIGTERM) }

// Kill stops the broker with SIGKILL.
func (m *Mosquitto) Kill() { m.end(syscall.SIGKILL) }

func (m *Mosquitto) end(sig syscall.Signal) {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(Timeout):
		_ = m.cmd.Process.Kill()
		<-done
	}
	m.cmd = nil
}

// Restart starts the broker again on the same address after Stop or Kill.
func (m *Mosquitto) Restart() {
	m.t.Helper()
	m.start()
}

// AttachConfig returns the configuration of dss attach to m, with short
// pauses between reconnections.
func (m *Mosquitto) AttachConfig(clientID string) *attach.Config {
	return &attach.Config{
		Broker:       m.URL(),
		ClientID:     clientID,
		ReconnectMin: 20 * time.Millisecond,
		ReconnectMax: 500 * time.Millisecond,
	}
}

// StartAttached starts a server attached to m with cfg (its Attach, when
// nil, is m.AttachConfig) and waits until it serves the broker's
// requests.
func StartAttached(t testing.TB, m *Mosquitto, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.NodeID == "" {
		cfg.NodeID = "test"
	}
	if cfg.Attach == nil {
		cfg.Attach = m.AttachConfig("dss-" + cfg.NodeID)
	}
	s := StartServer(t, cfg)
	WaitReady(t, s)
	return s
}

// WaitReady waits until s is ready (for an attached server: connected to
// its broker and subscribed).
func WaitReady(t testing.TB, s *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	for s.Ready() != nil {
		if ctx.Err() != nil {
			t.Fatalf("server not ready: %v", s.Ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

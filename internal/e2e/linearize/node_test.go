package linearize

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// node is one dss process, started, killed, paused and restarted by the
// test. Its output goes to a log file that outlives the test.
type node struct {
	bin    string // the dss binary it runs
	id     string
	addr   string   // MQTT listener
	args   []string // serve's arguments, the same at every start
	log    *os.File
	starts int

	mu     sync.Mutex
	cmd    *exec.Cmd     // guarded by mu; nil while stopped
	done   chan struct{} // guarded by mu; closed when cmd exited
	paused bool          // guarded by mu
}

// errNodeExited reports a process that ended by itself.
var errNodeExited = errors.New("dss exited")

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	// Below the ephemeral range: while a node is down, no outgoing
	// connection (not even a peer's attempt to reach it) takes its port.
	return dsstest.NodeAddr(t)
}

// newNode prepares a node that serves MQTT on addr with args; logPath is
// where its output goes. The process is stopped when the test ends.
func newNode(t testing.TB, bin, id, addr, logPath string, args ...string) *node {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{bin: bin, id: id, addr: addr, log: f, args: append([]string{"serve", "--listen", addr}, args...)}
	t.Cleanup(func() {
		n.kill()
		f.Close()
		if out, err := os.ReadFile(logPath); err == nil && strings.Contains(string(out), raceReport) {
			t.Errorf("the race detector reported a data race in node %s: see %s", id, logPath)
		}
	})
	return n
}

// start runs the process and waits until it accepts connections.
func (n *node) start(ctx context.Context) error {
	n.mu.Lock()
	if n.cmd != nil {
		n.mu.Unlock()
		return fmt.Errorf("node %s: already running", n.id)
	}
	n.starts++
	fmt.Fprintf(n.log, "==== start %d at %s\n", n.starts, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.bin, n.args...)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	// A race ends the process at once, so that the round sees it.
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	if err := startProcess(cmd); err != nil {
		n.mu.Unlock()
		return fmt.Errorf("node %s: %w", n.id, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	n.cmd, n.done, n.paused = cmd, done, false
	n.mu.Unlock()
	for {
		c, err := net.DialTimeout("tcp", n.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("node %s: %w at start: %s (log: %s)", n.id, errNodeExited, cmd.ProcessState, n.log.Name())
		case <-ctx.Done():
			return fmt.Errorf("node %s: not listening on %s: %w (log: %s)", n.id, n.addr, ctx.Err(), n.log.Name())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// signal sends sig to the running process.
func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("node %s: not running", n.id)
	}
	select {
	case <-n.done:
		return fmt.Errorf("node %s: %w: %s (log: %s)", n.id, errNodeExited, n.cmd.ProcessState, n.log.Name())
	default:
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("node %s: %s: %w", n.id, sig, err)
	}
	switch sig {
	case sigStop:
		n.paused = true
	case sigCont:
		n.paused = false
	}
	return nil
}

// kill ends the process with SIGKILL, as a crash or a power loss would,
// and waits until it is gone. It does nothing when the node is stopped.
func (n *node) kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd, n.paused = nil, false
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	fmt.Fprintf(n.log, "==== killed at %s\n", time.Now().Format(time.RFC3339Nano))
}

// running reports whether the process is up (it may be paused), and an
// error when it ended by itself.
func (n *node) running() (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false, nil
	}
	select {
	case <-n.done:
		return false, fmt.Errorf("node %s: %w: %s (log: %s)", n.id, errNodeExited, n.cmd.ProcessState, n.log.Name())
	default:
		return true, nil
	}
}

// SPDX-License-Identifier: MIT

package listeners

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// flakyListener fails its Accepts while failing is set, as a listener
// out of file descriptors does.
type flakyListener struct {
	net.Listener
	mu      sync.Mutex
	failing bool
	calls   int

	// failAfterAccept sets failing after each connection accepted, as
	// when that connection took the last descriptor.
	failAfterAccept bool
}

func (f *flakyListener) setFailAfterAccept(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAfterAccept = v
}

func (f *flakyListener) setFailing(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = v
}

func (f *flakyListener) Accept() (net.Conn, error) {
	f.mu.Lock()
	failing := f.failing
	f.calls++
	f.mu.Unlock()
	if failing {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	c, err := f.Listener.Accept()
	f.mu.Lock()
	if err == nil && f.failAfterAccept {
		f.failing = true
	}
	f.mu.Unlock()
	return c, err
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// failingListener is a TCP listener over a flakyListener that fails
// until told otherwise, serving in the background until the test ends,
// with its log and the connections it accepts at hand.
type failingListener struct {
	*TCP
	flaky       *flakyListener
	logs        *lockedBuffer
	established chan net.Conn
}

func serveFailing(t *testing.T) *failingListener {
	t.Helper()
	ln, err := net.Listen("tcp", testAddr)
	require.NoError(t, err)
	f := &failingListener{
		flaky:       &flakyListener{Listener: ln, failing: true},
		logs:        new(lockedBuffer),
		established: make(chan net.Conn, 1),
	}
	f.TCP = NewTCPFromListener("t1", f.flaky)
	require.NoError(t, f.Init(slog.New(slog.NewTextHandler(f.logs, nil))))
	served := make(chan struct{})
	go func() {
		defer close(served)
		f.Serve(func(id string, c net.Conn) error {
			f.established <- c
			return nil
		})
	}()
	t.Cleanup(func() {
		f.Close(MockCloser)
		<-served
	})
	return f
}

// acceptOne dials the listener and waits until it accepts.
func (f *failingListener) acceptOne(t *testing.T) {
	t.Helper()
	conn, err := net.Dial("tcp", f.flaky.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	select {
	case c := <-f.established:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
	}
}

// waitLogged waits until the log holds s.
func (f *failingListener) waitLogged(t *testing.T, s string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(f.logs.String(), s) }, 5*time.Second, time.Millisecond, f.logs.String())
}

func TestTCPListenerRetriesAcceptErrorsAndServesAgain(t *testing.T) {
	l := serveFailing(t)

	// A burst of errors: retried with growing waits, reported while it
	// lasts, logged once.
	require.Eventually(t, func() bool { return l.AcceptErrors() >= 5 }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, l.Failing(), syscall.EMFILE)
	l.flaky.setFailing(false)
	l.acceptOne(t)
	require.NoError(t, l.Failing())
	l.waitLogged(t, "accepting connections again")
	out := l.logs.String()
	require.Equal(t, 1, strings.Count(out, "accepting connections failed; retrying"), out)
	require.Equal(t, 1, strings.Count(out, "accepting connections again"), out)
	require.Contains(t, out, "too many open files")
}

func TestTCPListenerCloseEndsARetryWait(t *testing.T) {
	ln, err := net.Listen("tcp", testAddr)
	require.NoError(t, err)
	l := NewTCPFromListener("t1", &flakyListener{Listener: ln, failing: true})
	require.NoError(t, l.Init(logger))
	served := make(chan struct{})
	go func() {
		defer close(served)
		l.Serve(MockEstablisher)
	}()
	require.Eventually(t, func() bool { return l.AcceptErrors() >= 8 }, 5*time.Second, time.Millisecond) // waits of up to ~640 ms
	l.Close(MockCloser)
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
}

// TestTCPListenerLogsAFlappingBurstOnce: out of descriptors, a listener
// accepts one connection now and then and fails again in between. That
// is one burst, logged when it starts and when the listener has accepted
// for acceptQuiet without an error, with every error counted.
func TestTCPListenerLogsAFlappingBurstOnce(t *testing.T) {
	l := serveFailing(t)
	l.flaky.setFailAfterAccept(true)
	for flap := 0; flap < 3; flap++ {
		before := l.AcceptErrors()
		require.Eventually(t, func() bool { return l.AcceptErrors() >= before+2 }, 5*time.Second, time.Millisecond)
		require.Error(t, l.Failing())
		if flap == 2 {
			l.flaky.setFailAfterAccept(false)
		}
		l.flaky.setFailing(false)
		l.acceptOne(t)
	}
	require.NoError(t, l.Failing(), "accepting again clears Failing at once")
	l.waitLogged(t, "accepting connections again")
	out := l.logs.String()
	require.Equal(t, 1, strings.Count(out, "accepting connections failed; retrying"), out)
	require.Equal(t, 1, strings.Count(out, "accepting connections again"), out)
	require.Contains(t, out, "errors="+strconv.FormatInt(l.AcceptErrors(), 10), out)
}

// TestTCPListenerBurstEndsWithoutAConnection: out of descriptors, accept
// fails whether or not a connection is pending, so a burst can end with
// nothing to accept. It still ends (logged, Failing nil) once the
// listener has waited acceptQuiet without an error.
func TestTCPListenerBurstEndsWithoutAConnection(t *testing.T) {
	l := serveFailing(t)
	require.Eventually(t, func() bool { return l.AcceptErrors() >= 3 }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, l.Failing(), syscall.EMFILE)
	l.flaky.setFailing(false) // and no connection comes
	l.waitLogged(t, "accepting connections again")
	require.NoError(t, l.Failing())
	require.Equal(t, 1, strings.Count(l.logs.String(), "accepting connections failed; retrying"), l.logs.String())
}

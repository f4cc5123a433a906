// SPDX-License-Identifier: MIT

package listeners

import (
	"bytes"
	"log/slog"
	"net"
	"os"
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
	return f.Listener.Accept()
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

func TestTCPListenerRetriesAcceptErrorsAndServesAgain(t *testing.T) {
	ln, err := net.Listen("tcp", testAddr)
	require.NoError(t, err)
	flaky := &flakyListener{Listener: ln, failing: true}
	l := NewTCPFromListener("t1", flaky)
	logs := new(lockedBuffer)
	require.NoError(t, l.Init(slog.New(slog.NewTextHandler(logs, nil))))

	established := make(chan net.Conn, 1)
	served := make(chan struct{})
	go func() {
		defer close(served)
		l.Serve(func(id string, c net.Conn) error {
			established <- c
			return nil
		})
	}()
	defer func() {
		l.Close(MockCloser)
		<-served
	}()

	// A burst of errors: retried with growing waits, reported while it
	// lasts, logged once.
	require.Eventually(t, func() bool { return l.AcceptErrors() >= 5 }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, l.Failing(), syscall.EMFILE)
	flaky.setFailing(false)

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	select {
	case c := <-established:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted after the errors ended")
	}
	require.NoError(t, l.Failing())
	out := logs.String()
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

package mqtt

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/dssio/dss/internal/mqtt/listeners"
)

// mockListener is a listener that accepts nothing, for the tests of the
// server's handling of its listeners.
type mockListener struct {
	id, address string
	errListen   bool // Init fails
	done        chan struct{}

	mu      sync.Mutex
	serving bool
}

var _ listeners.Listener = (*mockListener)(nil)

func newMockListener(id, address string) *mockListener {
	return &mockListener{id: id, address: address, done: make(chan struct{})}
}

func (l *mockListener) Init(*slog.Logger) error {
	if l.errListen {
		return errors.New("listen failure")
	}
	return nil
}

func (l *mockListener) Serve(listeners.EstablishFn) {
	l.mu.Lock()
	l.serving = true
	l.mu.Unlock()
	<-l.done
}

func (l *mockListener) ID() string       { return l.id }
func (l *mockListener) Address() string  { return l.address }
func (l *mockListener) Protocol() string { return "mock" }

func (l *mockListener) Close(closer listeners.CloseFn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.serving = false
	closer(l.id)
	close(l.done)
}

func (l *mockListener) IsServing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.serving
}

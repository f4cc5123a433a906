package attach

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/eclipse/paho.golang/autopaho/queue"
	"github.com/eclipse/paho.golang/autopaho/queue/memory"
)

// outbox is the queue of the messages for the broker (responses and
// notifications), which autopaho sends in order while connected: a
// memory queue bounded in bytes. While dss is away from the broker,
// results still come (the cluster's other instances keep applying writes
// that registrations here are notified of); past the bound, new messages
// are dropped rather than memory grown without end.
type outbox struct {
	q   *memory.Queue
	max int64 // 0: no bound

	mu    sync.Mutex
	bytes int64   // guarded by mu
	sizes []int64 // guarded by mu; of the queued messages, oldest first
}

var _ queue.Queue = (*outbox)(nil)

// errOutboxFull refuses a message past the bound.
var errOutboxFull = errors.New("the queue of messages for the broker is full")

func newOutbox(max int64) *outbox { return &outbox{q: memory.New(), max: max} }

func (o *outbox) Wait() chan struct{}         { return o.q.Wait() }
func (o *outbox) WaitForEmpty() chan struct{} { return o.q.WaitForEmpty() }

// Enqueue adds a message, or refuses it past the bound.
func (o *outbox) Enqueue(p io.Reader) error {
	var b bytes.Buffer
	if _, err := b.ReadFrom(p); err != nil {
		return err
	}
	n := int64(b.Len())
	o.mu.Lock()
	if o.max > 0 && o.bytes+n > o.max {
		o.mu.Unlock()
		return errOutboxFull
	}
	o.bytes += n
	o.sizes = append(o.sizes, n)
	o.mu.Unlock()
	return o.q.Enqueue(&b)
}

// Peek returns the oldest message; removing it releases its bytes.
func (o *outbox) Peek() (queue.Entry, error) {
	e, err := o.q.Peek()
	if err != nil {
		return nil, err
	}
	return outboxEntry{Entry: e, o: o}, nil
}

// queued returns the bytes queued.
func (o *outbox) queued() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bytes
}

func (o *outbox) release() {
	o.mu.Lock()
	if len(o.sizes) > 0 {
		o.bytes -= o.sizes[0]
		o.sizes = o.sizes[1:]
	}
	o.mu.Unlock()
}

type outboxEntry struct {
	queue.Entry
	o *outbox
}

func (e outboxEntry) Remove() error {
	err := e.Entry.Remove()
	e.o.release()
	return err
}

func (e outboxEntry) Quarantine() error {
	err := e.Entry.Quarantine()
	e.o.release()
	return err
}

package listeners

import (
	"sync"
	"time"
)

// acceptQuiet is how long a listener must go without an accept error,
// once it tries again, before a burst of errors counts as over. Out of
// descriptors, a listener flaps: a closed connection frees one, the next
// accept takes it, and the accept after that fails again; without the
// wait each flap would log a failure and a recovery. dss.
const acceptQuiet = time.Second

// acceptBurst follows one burst of accept errors, from its first error
// until acceptQuiet has passed without another. The end does not wait
// for a connection: out of descriptors, accept fails whether or not one
// is pending, so the last error of a burst may be followed by nothing
// but an accept that waits. dss.
type acceptBurst struct {
	mu     sync.Mutex
	errors int64       // errors in the burst under way, 0 when there is none
	last   error       // the last error, until a connection is accepted or the burst ends
	ending *time.Timer // ends the burst after acceptQuiet, unless another error stops it
}

// failed counts err and reports whether it starts a burst. An error while
// the burst is ending resumes it.
func (b *acceptBurst) failed(err error) (starts bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopEnding()
	b.errors++
	b.last = err
	return b.errors == 1
}

// retrying arms the end of the burst under way, as the listener accepts
// again after its wait: ended is called with the burst's count of errors
// once acceptQuiet has passed without failed.
func (b *acceptBurst) retrying(ended func(errors int64)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.errors == 0 || b.ending != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(acceptQuiet, func() {
		b.mu.Lock()
		if b.ending != t { // failed or stop came first
			b.mu.Unlock()
			return
		}
		n := b.errors
		b.errors, b.last, b.ending = 0, nil, nil
		b.mu.Unlock()
		ended(n)
	})
	b.ending = t
}

// accepted clears the last error: the listener accepts connections, even
// if the burst has not ended yet.
func (b *acceptBurst) accepted() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = nil
}

// failing returns the last error of the burst under way, or nil.
func (b *acceptBurst) failing() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// stop drops a burst's pending end, when the listener closes.
func (b *acceptBurst) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopEnding()
}

func (b *acceptBurst) stopEnding() {
	if b.ending != nil {
		b.ending.Stop()
		b.ending = nil
	}
}

package listeners

import (
	"sync"
	"time"
)

// acceptQuiet is how long a listener must accept without an error before
// a burst of accept errors counts as over. Out of descriptors, a listener
// flaps: a closed connection frees one, the next accept takes it, and the
// accept after that fails again; without the wait each flap would log a
// failure and a recovery. dss.
const acceptQuiet = time.Second

// acceptBurst follows one burst of accept errors, from its first error
// until the listener has accepted for acceptQuiet without another. dss.
type acceptBurst struct {
	mu     sync.Mutex
	errors int64       // errors in the burst under way, 0 when there is none
	ending *time.Timer // set while the burst is ending: accepted, waiting out acceptQuiet
}

// failed counts an error and reports whether it starts a burst. An error
// while the burst is ending resumes it.
func (b *acceptBurst) failed() (starts bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ending != nil {
		b.ending.Stop()
		b.ending = nil
	}
	b.errors++
	return b.errors == 1
}

// accepted starts the end of a burst under way: ended is called with the
// burst's count of errors once acceptQuiet has passed without failed.
func (b *acceptBurst) accepted(ended func(errors int64)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.errors == 0 || b.ending != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(acceptQuiet, func() {
		b.mu.Lock()
		if b.ending != t { // failed resumed the burst (or stop) after the timer fired
			b.mu.Unlock()
			return
		}
		n := b.errors
		b.errors, b.ending = 0, nil
		b.mu.Unlock()
		ended(n)
	})
	b.ending = t
}

// stop drops a burst's pending end, when the listener closes.
func (b *acceptBurst) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ending != nil {
		b.ending.Stop()
		b.ending = nil
	}
}

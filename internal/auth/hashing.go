package auth

import (
	"runtime"
	"sync"
)

// hashSlots bounds the argon2id computations under way at once (each
// takes 19 MiB and a CPU for tens of milliseconds), and orders the
// logins that wait for one: first those from addresses without recent
// failed logins, then those from addresses that failed, each class in
// the order it came. An address that failed has at most one login under
// way (Throttle), so its logins take turns with those of the other
// failing addresses.
//
// A flood of wrong passwords from many addresses thus delays a login
// from an address without failures by at most the computations under way
// (one each, less than an argon2id computation on average), however
// many wait behind it. Only logins from addresses that have not failed
// yet, which each address of a flood is once, compete with it: their own
// failure puts them behind.
type hashSlots struct {
	mu      sync.Mutex
	free    int                // guarded by mu
	waiting [2][]chan struct{} // guarded by mu: clean, then suspect, oldest first
}

// verifySlots is the process's: max(2, CPUs) computations at once.
var verifySlots = newHashSlots(max(2, runtime.GOMAXPROCS(0)))

func newHashSlots(n int) *hashSlots { return &hashSlots{free: n} }

// acquire waits for a slot; suspect says the login comes from an
// address with recent failures.
func (h *hashSlots) acquire(suspect bool) {
	h.mu.Lock()
	if h.free > 0 {
		h.free--
		h.mu.Unlock()
		return
	}
	class := 0
	if suspect {
		class = 1
	}
	turn := make(chan struct{})
	h.waiting[class] = append(h.waiting[class], turn)
	h.mu.Unlock()
	<-turn
}

// release hands the slot to the first login waiting, or frees it.
func (h *hashSlots) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for class := range h.waiting {
		if q := h.waiting[class]; len(q) > 0 {
			close(q[0])
			q[0] = nil
			h.waiting[class] = q[1:]
			if len(h.waiting[class]) == 0 {
				h.waiting[class] = nil // let the backing array go
			}
			return
		}
	}
	h.free++
}

// waiters returns the logins waiting for a slot, for tests.
func (h *hashSlots) waiters() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiting[0]) + len(h.waiting[1])
}

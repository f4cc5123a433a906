// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// holdHook takes every request of client "flood" in hand (BeginPending)
// without answering it until release; it answers everyone else's at once.
type holdHook struct {
	echoHook
	mu   sync.Mutex
	held []*Client
}

func (h *holdHook) ConsumePublish(cl *Client, pk *packets.Packet) error {
	if cl.ID != "flood" {
		return h.echoHook.ConsumePublish(cl, pk)
	}
	cl.BeginPending()
	h.mu.Lock()
	h.held = append(h.held, cl)
	h.mu.Unlock()
	return packets.ErrRejectPacket
}

func (h *holdHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// release finishes n held requests.
func (h *holdHook) release(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cl := range h.held[:n] {
		cl.EndPending()
	}
	h.held = h.held[n:]
}

func TestAClientPastItsPendingBoundIsNotReadAndNobodyWaits(t *testing.T) {
	forEachReader(t, func(t *testing.T, loops int) {
		h := new(holdHook)
		_, addr, _ := faultServer(t, h, loops, Options{MaxPendingPerClient: 3})
		flood := dialLoop(t, addr, "flood", 30)
		other := dialLoop(t, addr, "other", 30)
		var burst []byte
		for i := 0; i < 10; i++ {
			burst = append(burst, flood.request([]byte("x"))...)
		}
		flood.write(burst)
		require.Eventually(t, func() bool { return h.count() == 3 }, 5*time.Second, time.Millisecond)
		// The other client is served meanwhile, and the flood's fourth
		// request stays unread.
		for i := 0; i < 5; i++ {
			stillServes(t, addr, other)
		}
		require.Equal(t, 3, h.count())
		h.release(2)
		require.Eventually(t, func() bool { return h.count() == 3 }, 5*time.Second, time.Millisecond)
		h.release(3)
		require.Eventually(t, func() bool { return h.count() == 3 }, 5*time.Second, time.Millisecond)
		h.release(3)
		require.Eventually(t, func() bool { return h.count() == 2 }, 5*time.Second, time.Millisecond) // the last two of ten
		h.release(2)
		// The flood's connection is served as before once it is below.
		flood.write(flood.request([]byte("y")))
		require.Eventually(t, func() bool { return h.count() == 1 }, 5*time.Second, time.Millisecond)
	})
}

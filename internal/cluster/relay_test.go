package cluster

import (
	"sync/atomic"
	"testing"
)

func testLink(buffer int64) *link {
	r := &relay{n: &Node{cfg: Config{RelayBuffer: buffer}, log: quietLogger()}}
	return newLink(r, "n2")
}

// While a peer cannot be reached, its QoS 0 messages are dropped and the
// others kept, oldest dropped first past the buffer; no publisher waits
// for it.
func TestRelayBufferForAnUnreachablePeer(t *testing.T) {
	l := testLink(300) // two messages of 100 bytes and their overhead
	var released atomic.Int32
	w := &relayWait{done: func() { released.Add(1) }}
	w.pending.Store(1)
	if l.enqueue(&relayItem{qos: 0, size: 164}, w) {
		t.Fatal("a QoS 0 message for an unreachable peer holds its publisher")
	}
	for i := 0; i < 3; i++ {
		if l.enqueue(&relayItem{qos: 1, size: 164, msg: []byte{byte(i)}}, w) {
			t.Fatal("a message for an unreachable peer holds its publisher")
		}
	}
	st := l.status()
	if st.Up || st.Buffered != 1 || st.BufferedBytes != 164 || l.items[0].msg[0] != 2 {
		t.Fatalf("buffer %+v, first %v", st, l.items[0].msg)
	}
	if got := l.r.dropped.Load(); got != 3 {
		t.Fatalf("%d dropped, want 3 (one QoS 0, two oldest past the buffer)", got)
	}
}

// Once the peer answers, its publishers wait for its acknowledgement; a
// stream that breaks lets them go (their messages stay, to be sent again)
// and drops the QoS 0 ones.
func TestRelayWaitsForAReachablePeer(t *testing.T) {
	l := testLink(DefaultRelayBuffer)
	l.up = true
	var released atomic.Int32
	w := &relayWait{done: func() { released.Add(1) }}
	w.pending.Store(2)
	for range 2 {
		if !l.enqueue(&relayItem{qos: 1, size: 64}, w) {
			t.Fatal("a publisher does not wait for a reachable peer")
		}
	}
	l.enqueue(&relayItem{qos: 0, size: 64}, nil)
	l.sent = 3
	l.acked(nil, 1)
	if released.Load() != 0 || len(l.items) != 2 || l.sent != 2 {
		t.Fatalf("after the first acknowledgement: %d released, %d kept, %d sent", released.Load(), len(l.items), l.sent)
	}
	l.setDown(errAckTimeout)
	if released.Load() != 1 || len(l.items) != 1 || l.items[0].seq != 2 || l.sent != 0 {
		t.Fatalf("after the stream broke: %d released, %d kept", released.Load(), len(l.items))
	}
}

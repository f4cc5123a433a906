package cluster

import (
	"bufio"
	"net"
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

// relayFrame encodes one frame of the messages seqs.
func relayFrame(seqs ...uint64) []byte {
	var f frame
	f.reset()
	for _, seq := range seqs {
		f.buf = appendRelayMessage(f.buf, &relayItem{seq: seq, qos: 1, msg: []byte("m")}, 0)
		f.count++
	}
	return append([]byte(nil), f.bytes()...)
}

// readRelayAck reads the receiver's next acknowledgement from c.
func readRelayAck(t *testing.T, br *bufio.Reader) uint64 {
	t.Helper()
	d, count, err := readFrame(br)
	if err != nil || count != 1 {
		t.Fatalf("acknowledgement: %d items, %v", count, err)
	}
	seq := d.Uvarint()
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	return seq
}

// The receiver of a stream acknowledges the frames that came together
// once, after the last of them, and what it has delivered as soon as the
// next frame is not all there: the sender is never left waiting for a
// frame still on its way.
func TestRelayAcknowledgesTheFramesThatCameTogetherOnce(t *testing.T) {
	r := &relay{n: &Node{log: quietLogger()}, recv: map[string]*receiver{}}
	sender, receiver := net.Pipe()
	defer sender.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		defer receiver.Close()
		r.serve(receiver)
	}()
	acks := bufio.NewReader(sender)
	write := func(b []byte) {
		t.Helper()
		if _, err := sender.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write(appendRelayHeader(nil, relayHeader{node: "n1", epoch: 7}))

	// Three frames in one write: one acknowledgement, of the last.
	var three []byte
	for seq := uint64(1); seq <= 3; seq++ {
		three = append(three, relayFrame(seq)...)
	}
	write(three)
	if got := readRelayAck(t, acks); got != 3 {
		t.Fatalf("acknowledged %d first, want 3: one acknowledgement for the frames that came together", got)
	}
	if got := r.received.Load(); got != 3 {
		t.Fatalf("%d delivered, want 3", got)
	}

	// A frame and the start of the next: the first is acknowledged
	// before the rest of the second comes.
	next := relayFrame(5)
	write(append(relayFrame(4), next[:3]...))
	if got := readRelayAck(t, acks); got != 4 {
		t.Fatalf("acknowledged %d, want 4", got)
	}
	write(next[3:])
	if got := readRelayAck(t, acks); got != 5 {
		t.Fatalf("acknowledged %d, want 5", got)
	}

	// Many frames at once are acknowledged every relayAckEvery messages.
	var many []byte
	for seq := uint64(6); seq < 6+2*relayAckEvery; seq++ {
		many = append(many, relayFrame(seq)...)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sender.Write(many)
		done <- err
	}()
	if got := readRelayAck(t, acks); got >= 6+2*relayAckEvery-1 {
		t.Fatalf("acknowledged %d first, want an acknowledgement before the last of %d messages", got, 2*relayAckEvery)
	}
	for got := uint64(0); got != 6+2*relayAckEvery-1; {
		got = readRelayAck(t, acks)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sender.Close()
	<-served
}

package attach

import (
	"bytes"
	"errors"
	"testing"
)

func TestOutboxBound(t *testing.T) {
	o := newOutbox(10)
	for i, want := range []error{nil, nil, errOutboxFull} {
		if err := o.Enqueue(bytes.NewReader([]byte("12345"))); !errors.Is(err, want) {
			t.Fatalf("message %d: %v, want %v", i, err, want)
		}
	}
	if n := o.queued(); n != 10 {
		t.Fatalf("%d bytes queued, want 10", n)
	}
	e, err := o.Peek()
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Remove()
	if n := o.queued(); n != 5 {
		t.Fatalf("%d bytes queued after a removal, want 5", n)
	}
	if err := o.Enqueue(bytes.NewReader([]byte("12345"))); err != nil {
		t.Fatalf("room made by the removal: %v", err)
	}
	unbounded := newOutbox(0)
	for range 100 {
		if err := unbounded.Enqueue(bytes.NewReader(make([]byte, 1000))); err != nil {
			t.Fatal(err)
		}
	}
}

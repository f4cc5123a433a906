package bincode

import (
	"errors"
	"math"
	"testing"

	"github.com/dssio/dss/hlc"
)

var errBad = errors.New("bad")

func TestRoundTrip(t *testing.T) {
	ts := hlc.Timestamp{Wall: -5, Counter: math.MaxUint32, Node: "n1"}
	b := AppendBytes(nil, []byte("\x00\xff"))
	b = AppendString(b, "key")
	b = AppendBool(b, true)
	b = AppendStamp(b, ts)
	d := NewDecoder(b, errBad)
	if v := d.Bytes(); string(v) != "\x00\xff" {
		t.Fatalf("bytes %q", v)
	}
	if v := d.Clone(); string(v) != "key" {
		t.Fatalf("clone %q", v)
	}
	if !d.Bool() {
		t.Fatal("bool")
	}
	if v := d.Stamp(); v != ts {
		t.Fatalf("stamp %+v", v)
	}
	if d.Err() != nil || d.Len() != 0 {
		t.Fatalf("err %v, %d bytes left", d.Err(), d.Len())
	}
}

// The first error sticks: reads after it return zero values, and a later
// SetErr does not replace it.
func TestFirstErrorSticks(t *testing.T) {
	b := AppendString(nil, "abc")
	d := NewDecoder(b[:2], errBad) // the length says 3, 1 is there
	if v := d.Str(); v != "" || !errors.Is(d.Err(), errBad) {
		t.Fatalf("short bytes: %q, %v", v, d.Err())
	}
	d.SetErr(errors.New("later"))
	if !errors.Is(d.Err(), errBad) || d.Uvarint() != 0 || d.Byte() != 0 || d.Len() != 0 {
		t.Fatalf("after the first error: %v", d.Err())
	}
}

// A count larger than the bytes left is malformed, and a counter wider
// than 32 bits is damage.
func TestBoundsAreChecked(t *testing.T) {
	d := NewDecoder([]byte{5, 1}, errBad)
	if n := d.Count(); n != 0 || d.Err() == nil {
		t.Fatalf("count %d, %v", n, d.Err())
	}
	b := AppendStamp(nil, hlc.Timestamp{Wall: 1, Node: "n"})
	b = append(b[:1], 0x80, 0x80, 0x80, 0x80, 0x10, 1, 'n') // counter 1<<32
	d = NewDecoder(b, errBad)
	if d.Stamp(); d.Err() == nil {
		t.Fatal("a counter of 1<<32 was taken")
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add(AppendStamp(AppendString(nil, "k"), hlc.Timestamp{Wall: 7, Counter: 2, Node: "n2"}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(b, errBad)
		for d.Err() == nil && d.Len() > 0 {
			_ = d.Count()
			_ = d.Stamp()
			_ = d.Bytes()
		}
		if d.Err() != nil && d.Len() != 0 {
			t.Fatal("a failed decoder kept bytes")
		}
	})
}

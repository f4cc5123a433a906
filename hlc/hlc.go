// Package hlc implements the hybrid logical clock timestamps that the state
// store uses as versions and fencing tokens.
//
// A timestamp is written as {wallClock}:{counter}:{nodeId}: milliseconds since
// the Unix epoch, a counter that orders events within one millisecond, and the
// id of the node that issued it. Timestamps order by wall clock, then counter,
// then node id (byte-wise), so two timestamps from different nodes never
// compare equal unless they are the same timestamp.
package hlc

import (
	"errors"
	"strings"
	"time"
)

// Timestamp is one hybrid logical clock reading. The zero value is the
// smallest timestamp and is reported by IsZero.
type Timestamp struct {
	// Wall is the physical part, in milliseconds since the Unix epoch.
	Wall int64
	// Counter orders timestamps that share a wall clock millisecond.
	Counter uint32
	// Node identifies the clock that issued the timestamp.
	Node string
}

// ErrMalformed is returned by Parse for text that is not a timestamp.
var ErrMalformed = errors.New("hlc: malformed timestamp")

// Parse reads a timestamp in the form wall:counter:node. Wall and counter
// are unsigned decimal numbers of any width (leading zeros are allowed); the
// node id is everything after the second colon and may itself contain colons.
func Parse(s string) (Timestamp, error) {
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return Timestamp{}, ErrMalformed
	}
	j := strings.IndexByte(s[i+1:], ':')
	if j < 0 {
		return Timestamp{}, ErrMalformed
	}
	j += i + 1
	wall, ok := parseDigits(s[:i], 63)
	if !ok {
		return Timestamp{}, ErrMalformed
	}
	counter, ok := parseDigits(s[i+1:j], 32)
	if !ok {
		return Timestamp{}, ErrMalformed
	}
	return Timestamp{Wall: int64(wall), Counter: uint32(counter), Node: s[j+1:]}, nil
}

// parseDigits parses a non-empty run of ASCII digits whose value fits in
// bits bits (at most 63), as strconv.ParseUint(s, 10, bits) does: signs,
// spaces and other characters are rejected. Every request carries a
// timestamp, and one pass over the digits reads it in less time than
// ParseUint's general bases and error values.
func parseDigits(s string, bits int) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	limit := uint64(1)<<bits - 1
	var v uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if d > 9 {
			return 0, false
		}
		// From 2^60 on, v*10 passes every limit (at most 2^63-1); below,
		// v*10+d cannot overflow.
		if v >= 1<<60 {
			return 0, false
		}
		if v = v*10 + d; v > limit {
			return 0, false
		}
	}
	return v, true
}

// String formats the timestamp as the vendor clients do: the wall clock
// padded to 15 digits and the counter to 5, then the node id.
func (t Timestamp) String() string {
	return string(t.AppendText(make([]byte, 0, 22+len(t.Node))))
}

// AppendText appends the text form of t to b.
func (t Timestamp) AppendText(b []byte) []byte {
	b = appendPadded(b, uint64(t.Wall), 15)
	b = append(b, ':')
	b = appendPadded(b, uint64(t.Counter), 5)
	b = append(b, ':')
	return append(b, t.Node...)
}

// MarshalText implements encoding.TextMarshaler.
func (t Timestamp) MarshalText() ([]byte, error) { return t.AppendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Timestamp) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

func appendPadded(b []byte, v uint64, width int) []byte {
	var digits [20]byte
	i := len(digits)
	for {
		i--
		digits[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	for n := len(digits) - i; n < width; n++ {
		b = append(b, '0')
	}
	return append(b, digits[i:]...)
}

// Compare returns -1, 0 or +1 as t orders before, equal to or after u.
func (t Timestamp) Compare(u Timestamp) int {
	switch {
	case t.Wall < u.Wall:
		return -1
	case t.Wall > u.Wall:
		return 1
	case t.Counter < u.Counter:
		return -1
	case t.Counter > u.Counter:
		return 1
	}
	return strings.Compare(t.Node, u.Node)
}

// Before reports whether t orders before u.
func (t Timestamp) Before(u Timestamp) bool { return t.Compare(u) < 0 }

// After reports whether t orders after u.
func (t Timestamp) After(u Timestamp) bool { return t.Compare(u) > 0 }

// IsZero reports whether t is the zero timestamp.
func (t Timestamp) IsZero() bool { return t == Timestamp{} }

// Time returns the wall clock part as a time.Time.
func (t Timestamp) Time() time.Time { return time.UnixMilli(t.Wall) }

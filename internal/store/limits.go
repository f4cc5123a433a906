package store

import "errors"

// Limits bound what a machine stores. Every replica of a machine must
// have the same limits, so that a command is refused on all of them or
// on none: the counts they are checked against (Len and DataBytes) are
// part of the deterministic state.
type Limits struct {
	// MaxKeys bounds the number of stored keys; 0 means no bound.
	MaxKeys int
	// MaxBytes bounds DataBytes, the total length of the stored keys and
	// values; 0 means no bound.
	MaxBytes int64
}

// ErrQuotaExceeded: the command would take the machine past its Limits.
// Commands that shrink the store (DEL, VDEL, expiries, a SET of a shorter
// value) are never refused for it.
var ErrQuotaExceeded = errors.New("store: the quota has been exceeded")

// SetLimits sets the bounds that SETs are checked against from now on.
// Keys and bytes stored already are kept even when they are past them.
func (m *Machine) SetLimits(l Limits) { m.limits = l }

// Limits returns the machine's bounds.
func (m *Machine) Limits() Limits { return m.limits }

// admits reports whether storing a value of size bytes for key (of keyLen
// bytes) stays within the limits, where old is the size of the key and
// value it replaces (found says whether there is one).
func (m *Machine) admits(keyLen, valueLen int, found bool, old int) bool {
	if !found && m.limits.MaxKeys > 0 && m.keys.len() >= m.limits.MaxKeys {
		return false
	}
	grow := int64(keyLen+valueLen) - int64(old)
	return grow <= 0 || m.limits.MaxBytes == 0 || m.dataBytes+grow <= m.limits.MaxBytes
}

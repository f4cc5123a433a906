//go:build !linux

package readloop

import (
	"errors"
	"syscall"
)

// Available reports whether New can start loops on this system: they
// need Linux's epoll.
const Available = false

// ErrUnavailable is New's error where loops cannot run.
var ErrUnavailable = errors.New("read loops are not available on this system")

// Loop is not available outside Linux: every connection is read by a
// goroutine of its own.
type Loop[C comparable] struct{}

// New reports ErrUnavailable.
func New[C comparable](Handler[C]) (*Loop[C], error) { return nil, ErrUnavailable }

// Add reports ErrUnavailable.
func (l *Loop[C]) Add(*Member, syscall.RawConn, C) error { return ErrUnavailable }

// TakeBack reports false: no connection was added.
func (l *Loop[C]) TakeBack(*Member) bool { return false }

// Close does nothing.
func (l *Loop[C]) Close() {}

// Len reports 0.
func (l *Loop[C]) Len() int { return 0 }

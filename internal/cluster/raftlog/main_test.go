package raftlog

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them:
// a log store must leave nothing running once it is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package attach

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// attacher's connection manager, subscribers, listings and lease sweeper
// must all end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

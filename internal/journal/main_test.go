package journal

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them:
// the journal's sync goroutine and the snapshot writers must end when
// the journal is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every
// goroutine a Node starts must end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

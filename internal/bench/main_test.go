package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them:
// the load generator's workers and connections must end with the run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

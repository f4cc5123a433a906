package readloop

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a loop's goroutine outlives
// its Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

package listeners

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them:
// a listener's accept loop and the goroutines of the connections it
// hands on must end when it is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package conformance

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them:
// every goroutine a server, a client or a connection starts must end when
// it is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

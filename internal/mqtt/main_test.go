package mqtt

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// TestMain fails the package's tests when a goroutine outlives them:
// every goroutine a server, a client or a connection starts must end when
// it is closed. The clients of newTestClient are stopped first: the
// tests that make them leave them running.
func TestMain(m *testing.M) {
	code := m.Run()
	stopTestClients()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// copyOf returns a copy of pk to hand by pointer to code that changes
// it, so that a table's packet stays as it was for the next test.
func copyOf(pk packets.Packet) *packets.Packet { return &pk }

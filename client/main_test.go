package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the tests: every
// goroutine of a Client (and of the paho connections it owns), and of the
// servers the tests start, must end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

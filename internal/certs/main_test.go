package certs_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them:
// the watch for changed certificate files must end when it is stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

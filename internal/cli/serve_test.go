package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestServeRefusesAnAnonymousListenerBeyondLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), []string{"serve", "--in-memory", "--listen", "0.0.0.0:0"}, Stdio{Out: &out, Err: &errOut})
	if code != ExitError {
		t.Fatalf("exit status %d, want %d; stderr:\n%s", code, ExitError, errOut.String())
	}
	if !strings.Contains(errOut.String(), "--allow-anonymous") {
		t.Fatalf("the refusal does not say how to proceed:\n%s", errOut.String())
	}
}

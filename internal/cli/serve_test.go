package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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

// A missing, empty or short admin token file stops dss serve with a
// message that names the setting.
func TestServeChecksTheAdminTokenFile(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("short\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for file, want := range map[string]string{
		filepath.Join(dir, "none"): "--admin-token-file: open " + filepath.Join(dir, "none"),
		short:                      "--admin-token-file: " + short + " holds a token of 5 characters: want 16 or more",
		empty:                      "--admin-token-file: " + empty + " holds a token of 0 characters: want 16 or more",
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a serve that wrongly starts stops at once
		var out, errOut bytes.Buffer
		code := Run(ctx, []string{"serve", "--in-memory", "--listen", "127.0.0.1:0", "--admin-token-file", file}, Stdio{Out: &out, Err: &errOut})
		if code != ExitError || !strings.Contains(errOut.String(), want) {
			t.Errorf("--admin-token-file %s: exit status %d, stderr %q; want %q", file, code, errOut.String(), want)
		}
	}
}

package cli

import (
	"strings"
	"testing"
)

func TestDelCmd(t *testing.T) {
	addr, c := startServer(t)
	res, err := c.Set(testCtx(t), "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "del", "--server", addr, "--json", "k").expectCode(t, ExitOK)
	if want := `{"deleted":true,"encoding":"utf8","key":"k","mismatch":false,"version":"` + res.Version.String() + `"}` + "\n"; r.out != want {
		t.Fatalf("json %q, want %q", r.out, want)
	}
	if _, found, _ := c.Get(testCtx(t), "k"); found {
		t.Fatal("key still there")
	}
	r = runCLI(t, "", "del", "--server", addr, "k").expectCode(t, ExitFalse)
	if r.out != "" || r.err != "" {
		t.Fatalf("missing key: stdout %q stderr %q", r.out, r.err)
	}
}

func TestDelCmdFencing(t *testing.T) {
	addr, c := startServer(t)
	lock, err := c.Set(testCtx(t), "lock", []byte("me"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(testCtx(t), "res", []byte("v"), clientFence(lock.Version)); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "del", "--server", addr, "res").expectCode(t, ExitError)
	if !strings.Contains(r.err, "a fencing token is required for this request") {
		t.Fatalf("stderr %q", r.err)
	}
	runCLI(t, "", "del", "--server", addr, "--fencing-token", lock.Version.String(), "res").expectCode(t, ExitOK)
}

package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
)

func TestSetCmd(t *testing.T) {
	addr, c := startServer(t)
	r := runCLI(t, "", "set", "--server", addr, "k", "v").expectCode(t, ExitOK)
	if r.out != "" || r.err != "" {
		t.Fatalf("output %q %q, want none", r.out, r.err)
	}
	if e, _, err := c.Get(testCtx(t), "k"); err != nil || string(e.Value) != "v" {
		t.Fatalf("stored %q, %v", e.Value, err)
	}

	r = runCLI(t, "", "set", "--server", addr, "--json", "k", "v2").expectCode(t, ExitOK)
	var out struct {
		Key     string
		Applied bool
		Version string
	}
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("json %q: %v", r.out, err)
	}
	e, _, _ := c.Get(testCtx(t), "k")
	if out.Key != "k" || !out.Applied || out.Version != e.Version.String() {
		t.Fatalf("json %+v, want applied at %v", out, e.Version)
	}
}

func TestSetCmdConditions(t *testing.T) {
	addr, c := startServer(t)
	runCLI(t, "", "set", "--server", addr, "--nx", "k", "first").expectCode(t, ExitOK)
	r := runCLI(t, "", "set", "--server", addr, "--nx", "--json", "k", "second").expectCode(t, ExitFalse)
	if !strings.Contains(r.out, `"applied":false`) || r.err != "" {
		t.Fatalf("not applied: stdout %q stderr %q", r.out, r.err)
	}
	runCLI(t, "", "set", "--server", addr, "--nex", "k", "first").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "--nex", "k", "other").expectCode(t, ExitFalse)
	if e, _, _ := c.Get(testCtx(t), "k"); string(e.Value) != "first" {
		t.Fatalf("value %q after refused sets", e.Value)
	}
	r = runCLI(t, "", "set", "--server", addr, "--nx", "--nex", "k", "v").expectCode(t, ExitError)
	if !strings.Contains(r.err, "exclude") {
		t.Fatalf("stderr %q", r.err)
	}
	runCLI(t, "", "set", "--server", addr, "--px", "-5", "k", "v").expectCode(t, ExitError)
	runCLI(t, "", "set", "--server", addr, "k").expectCode(t, ExitError)
}

func TestSetCmdPX(t *testing.T) {
	addr, c := startServer(t)
	runCLI(t, "", "set", "--server", addr, "--px", "30", "k", "v").expectCode(t, ExitOK)
	dsstest.Eventually(t, "the key expires", func() bool {
		_, found, err := c.Get(testCtx(t), "k")
		return err == nil && !found
	})
}

func TestSetCmdStdinIsBinarySafe(t *testing.T) {
	addr, c := startServer(t)
	value := "\x00\r\n\xff$-1\r\n"
	runCLI(t, value, "set", "--server", addr, "bin\x01key", "-").expectCode(t, ExitOK)
	if e, _, err := c.Get(testCtx(t), "bin\x01key"); err != nil || string(e.Value) != value {
		t.Fatalf("stored %q, %v; want %q", e.Value, err, value)
	}
	// After --, a value may start with '-'.
	runCLI(t, "", "set", "--server", addr, "neg", "--", "-5").expectCode(t, ExitOK)
	if e, _, _ := c.Get(testCtx(t), "neg"); string(e.Value) != "-5" {
		t.Fatalf("stored %q, want -5", e.Value)
	}
}

func TestSetCmdFencing(t *testing.T) {
	addr, c := startServer(t)
	lock, err := c.Set(testCtx(t), "lock", []byte("me"))
	if err != nil {
		t.Fatal(err)
	}
	token := lock.Version.String()
	runCLI(t, "", "set", "--server", addr, "--fencing-token", token, "res", "1").expectCode(t, ExitOK)
	r := runCLI(t, "", "set", "--server", addr, "res", "2").expectCode(t, ExitError)
	if !strings.Contains(r.err, client.ErrFencingTokenRequired.Text) {
		t.Fatalf("stderr %q: want the server's error text", r.err)
	}
	stale := hlc.Timestamp{Wall: lock.Version.Wall - 1, Node: "x"}.String()
	r = runCLI(t, "", "set", "--server", addr, "--fencing-token", stale, "res", "2").expectCode(t, ExitError)
	if !strings.Contains(r.err, client.ErrFencingTokenLowerVersion.Text) {
		t.Fatalf("stderr %q", r.err)
	}
	r = runCLI(t, "", "set", "--server", addr, "--fencing-token", "nonsense", "res", "2").expectCode(t, ExitError)
	if !strings.Contains(r.err, "--fencing-token") {
		t.Fatalf("stderr %q", r.err)
	}
	// The token also comes from the environment, as dss lock passes it.
	t.Setenv("DSS_FENCING_TOKEN", token)
	runCLI(t, "", "set", "--server", addr, "res", "3").expectCode(t, ExitOK)
	if e, _, _ := c.Get(testCtx(t), "res"); string(e.Value) != "3" {
		t.Fatalf("value %q, want 3", e.Value)
	}
}

func TestSetCmdServerFromEnvAndFailover(t *testing.T) {
	addr, c := startServer(t)
	t.Setenv("DSS_SERVER", dsstest.ClosedAddr(t)+","+addr)
	runCLI(t, "", "set", "k", "via env").expectCode(t, ExitOK)
	if e, _, _ := c.Get(testCtx(t), "k"); string(e.Value) != "via env" {
		t.Fatalf("value %q", e.Value)
	}
}

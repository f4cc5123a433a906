package cli

import (
	"encoding/json"
	"testing"
)

func TestVDelCmd(t *testing.T) {
	addr, c := startServer(t)
	if _, err := c.Set(testCtx(t), "k", []byte("mine\x00")); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "vdel", "--server", addr, "--json", "k", "theirs").expectCode(t, ExitFalse)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.out), &out); err != nil || out["deleted"] != false || out["mismatch"] != true || out["key"] != "k" {
		t.Fatalf("json %q (%v), want a mismatch", r.out, err)
	}
	if _, found, _ := c.Get(testCtx(t), "k"); !found {
		t.Fatal("deleted despite the mismatch")
	}
	runCLI(t, "mine\x00", "vdel", "--server", addr, "k", "-").expectCode(t, ExitOK)
	if _, found, _ := c.Get(testCtx(t), "k"); found {
		t.Fatal("not deleted")
	}
	r = runCLI(t, "", "vdel", "--server", addr, "--json", "k", "mine").expectCode(t, ExitFalse)
	if r.out != `{"deleted":false,"encoding":"utf8","key":"k","mismatch":false}`+"\n" {
		t.Fatalf("missing key json %q", r.out)
	}
}

func TestVDelCmdFencing(t *testing.T) {
	addr, c := startServer(t)
	token := protectedKey(t, c, "res", "v")
	runCLI(t, "", "vdel", "--server", addr, "res", "v").expectCode(t, ExitError)
	runCLI(t, "", "vdel", "--server", addr, "--fencing-token", token, "res", "v").expectCode(t, ExitOK)
}

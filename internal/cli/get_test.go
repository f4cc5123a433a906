package cli

import (
	"encoding/base64"
	"encoding/json"
	"testing"
)

func TestGetCmd(t *testing.T) {
	addr, c := startServer(t)
	value := "line 1\nline 2\x00\xff"
	res, err := c.Set(testCtx(t), "k", []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "get", "--server", addr, "k").expectCode(t, ExitOK)
	if r.out != value || r.err != "" {
		t.Fatalf("stdout %q stderr %q, want exactly %q", r.out, r.err, value)
	}

	// A single node answers a stale read like any other (a cluster's
	// nodes: see the e2e cluster tests).
	r = runCLI(t, "", "get", "--server", addr, "--stale", "k").expectCode(t, ExitOK)
	if r.out != value {
		t.Fatalf("get --stale: stdout %q", r.out)
	}

	r = runCLI(t, "", "get", "--server", addr, "--json", "k").expectCode(t, ExitOK)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("json %q: %v", r.out, err)
	}
	raw, _ := base64.StdEncoding.DecodeString(out["value"].(string))
	if out["found"] != true || out["key"] != "aw==" || out["encoding"] != "base64" || string(raw) != value || out["version"] != res.Version.String() {
		t.Fatalf("json %v", out)
	}

	if _, err := c.Set(testCtx(t), "text", []byte("plain")); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "get", "--server", addr, "--json", "text").expectCode(t, ExitOK)
	if err := json.Unmarshal([]byte(r.out), &out); err != nil || out["value"] != "plain" || out["encoding"] != "utf8" {
		t.Fatalf("json %q", r.out)
	}
}

func TestGetCmdMissing(t *testing.T) {
	addr, _ := startServer(t)
	r := runCLI(t, "", "get", "--server", addr, "nope").expectCode(t, ExitFalse)
	if r.out != "" || r.err != "" {
		t.Fatalf("stdout %q stderr %q, want none", r.out, r.err)
	}
	r = runCLI(t, "", "get", "--server", addr, "--json", "nope").expectCode(t, ExitFalse)
	if r.out != `{"encoding":"utf8","found":false,"key":"nope"}`+"\n" {
		t.Fatalf("json %q", r.out)
	}
}

func TestGetCmdErrors(t *testing.T) {
	addr, _ := startServer(t)
	r := runCLI(t, "", "get", "--server", addr, "").expectCode(t, ExitError)
	if r.err != "dss: get \"\": the key length is zero\n" {
		t.Fatalf("stderr %q", r.err)
	}
	runCLI(t, "", "get", "--server", addr).expectCode(t, ExitError)
	runCLI(t, "", "get", "--server", addr, "a", "b").expectCode(t, ExitError)
}

// dss get --json reports the version and, for a key that expires, the
// time it has left.
func TestGetJSONHasTTLAndVersion(t *testing.T) {
	addr, _ := startServer(t)
	runCLI(t, "", "set", "--server", addr, "--px", "1m", "k", "v").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "forever", "v").expectCode(t, ExitOK)
	var got struct {
		Version string `json:"version"`
		TTL     *int64 `json:"ttl_ms"`
	}
	r := runCLI(t, "", "get", "--server", addr, "--json", "k").expectCode(t, ExitOK)
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.Version == "" || got.TTL == nil || *got.TTL <= 0 || *got.TTL > 60000 {
		t.Fatalf("get --json of a key with --px 1m: %s (%v)", r.out, err)
	}
	got.TTL = nil
	r = runCLI(t, "", "get", "--server", addr, "--json", "forever").expectCode(t, ExitOK)
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || got.TTL != nil {
		t.Fatalf("get --json of a key without expiry: %s (%v)", r.out, err)
	}
}

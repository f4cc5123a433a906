package cli

import (
	"slices"
	"strings"
	"testing"
)

func TestKeysCmd(t *testing.T) {
	addr, c := startServer(t)
	for _, k := range []string{"door/2", "door/1", "window/1", "line\nbreak"} {
		if _, err := c.Set(testCtx(t), k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	sorted := func(out string) string {
		lines := strings.SplitAfter(out, "\n")
		slices.Sort(lines)
		return strings.Join(lines, "")
	}
	r := runCLI(t, "", "keys", "--server", addr).expectCode(t, ExitOK)
	if want := "door/1\ndoor/2\nline\\nbreak\nwindow/1\n"; sorted(r.out) != want {
		t.Fatalf("keys: %q, want %q in some order", r.out, want)
	}
	r = runCLI(t, "", "keys", "--server", addr, "door/*").expectCode(t, ExitOK)
	if sorted(r.out) != "door/1\ndoor/2\n" {
		t.Fatalf("keys door/*: %q", r.out)
	}
	r = runCLI(t, "", "keys", "--server", addr, "--json", "line*").expectCode(t, ExitOK)
	if r.out != `{"encoding":"utf8","key":"line\nbreak"}`+"\n" {
		t.Fatalf("keys --json: %q", r.out)
	}
	r = runCLI(t, "", "keys", "--server", addr, "none*").expectCode(t, ExitFalse)
	if r.out != "" || r.err != "" {
		t.Fatalf("no match: stdout %q stderr %q", r.out, r.err)
	}
	// An empty pattern matches only the empty key, which no key is.
	runCLI(t, "", "keys", "--server", addr, "").expectCode(t, ExitFalse)
}

package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
)

func TestWatchCmd(t *testing.T) {
	addr, c := startServer(t)
	w := startCLI(t, "watch", "--server", addr, "--current", "a", "b")
	// --current reports the state first, which also says the watch is
	// registered.
	w.waitOutput(t, "a DELETE\n")
	w.waitOutput(t, "b DELETE\n")
	if _, err := c.Set(testCtx(t), "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	w.waitOutput(t, "a SET 1\n")
	if _, err := c.Set(testCtx(t), "b", []byte("two words")); err != nil {
		t.Fatal(err)
	}
	w.waitOutput(t, "b SET two words\n")
	if _, err := c.Set(testCtx(t), "c", []byte("unwatched")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Del(testCtx(t), "a"); err != nil {
		t.Fatal(err)
	}
	w.waitOutput(t, "a SET 1\nb SET two words\na DELETE\n")
	// One change is one line, whatever the bytes.
	if _, err := c.Set(testCtx(t), "b", []byte("line 1\nline 2\t\\ \x00\xff é")); err != nil {
		t.Fatal(err)
	}
	w.waitOutput(t, "a DELETE\nb SET line 1\\nline 2\\t\\\\ \\x00\\xff é\n")
	if code := w.stop(t); code != ExitOK {
		t.Fatalf("exit status %d after interrupt; stderr %q", code, w.err.String())
	}
	if strings.Contains(w.out.String(), "unwatched") {
		t.Fatalf("printed an unwatched key: %q", w.out.String())
	}
}

func TestWatchCmdJSON(t *testing.T) {
	addr, c := startServer(t)
	w := startCLI(t, "watch", "--server", addr, "--json", "--current", "k")
	w.waitOutput(t, `{"encoding":"utf8","key":"k","op":"DELETE","resync":true}`+"\n")
	res, err := c.Set(testCtx(t), "k", []byte{0xff})
	if err != nil {
		t.Fatal(err)
	}
	w.waitOutput(t, `"op":"SET"`)
	if code := w.stop(t); code != ExitOK {
		t.Fatalf("exit status %d", code)
	}
	lines := strings.Split(strings.TrimSpace(w.out.String()), "\n")
	var e map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatal(err)
	}
	if e["key"] != "aw==" || e["value"] != "/w==" || e["encoding"] != "base64" || e["version"] != res.Version.String() || e["resync"] != false {
		t.Fatalf("event %v", e)
	}
}

func TestWatchCmdErrors(t *testing.T) {
	addr, _ := startServer(t)
	r := runCLI(t, "", "watch", "--server", addr, "")
	r.expectCode(t, ExitError)
	if !strings.Contains(r.err, "the key length is zero") {
		t.Fatalf("stderr %q", r.err)
	}
	runCLI(t, "", "watch", "--server", addr).expectCode(t, ExitError)
	runCLI(t, "", "watch", "--server", dsstest.ClosedAddr(t), "--timeout", "100ms", "k").expectCode(t, ExitError)
}

func TestWatchCmdPattern(t *testing.T) {
	addr, c := startServer(t)
	w := startCLI(t, "watch", "--server", addr, "--pattern", "sensor/*", "sensor/temp")
	// The watch prints nothing before a change: set a key until it shows.
	dsstest.Eventually(t, "the pattern watch to report", func() bool {
		if _, err := c.Set(testCtx(t), "sensor/probe", []byte("p")); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(w.out.String(), "sensor/probe SET p\n")
	})
	for _, kv := range [][2]string{{"other", "x"}, {"sensor/temp", "21"}, {"sensor/\xff", "y"}, {"sensor/z", "last"}} {
		if _, err := c.Set(testCtx(t), kv[0], []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	w.waitOutput(t, "sensor/z SET last\n")
	if code := w.stop(t); code != ExitOK {
		t.Fatalf("exit status %d; stderr %q", code, w.err.String())
	}
	out := w.out.String()
	// Watched by name and by the pattern, sensor/temp's change prints
	// once; keys outside the pattern, or not UTF-8, not at all.
	if n := strings.Count(out, "sensor/temp SET 21\n"); n != 1 || strings.Contains(out, "other") || strings.Contains(out, `\xff`) {
		t.Fatalf("output %q (%d lines of sensor/temp)", out, n)
	}
}

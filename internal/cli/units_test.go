package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "-1": -1, "65536": 65536, "64KiB": 64 << 10, "64kib": 64 << 10, "64 MiB": 64 << 20,
		"64MiB": 64 << 20, "1GiB": 1 << 30, "1.5GiB": 3 << 29, "64KB": 64000, "64K": 64 << 10,
		"64M": 64 << 20, "2Gi": 2 << 30, "1TiB": 1 << 40, "100B": 100,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "64XB", "1.5", "0.3B", "1.0000001KiB", "9999999999TiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
	for n, want := range map[int64]string{0: "0", -1: "-1", 100: "100", 64 << 20: "64MiB", 16 << 10: "16KiB", 1536: "1536", 1 << 40: "1TiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseSize(formatSize(n)); err != nil || back != n {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in     string
		legacy time.Duration
		want   time.Duration
	}{
		{"10s", 0, 10 * time.Second}, {"0", 0, 0}, {"1m30s", 0, 90 * time.Second},
		{"5000", time.Millisecond, 5 * time.Second}, {"5s", time.Millisecond, 5 * time.Second},
	} {
		if got, err := parseDuration(tc.in, tc.legacy); err != nil || got != tc.want {
			t.Errorf("parseDuration(%q, %v) = %v, %v; want %v", tc.in, tc.legacy, got, err, tc.want)
		}
	}
	if _, err := parseDuration("5", 0); err == nil || !strings.Contains(err.Error(), "needs a unit") {
		t.Errorf("parseDuration(5) without a legacy unit: %v", err)
	}
}

// Every time flag takes one duration syntax, and set --px its old bare
// milliseconds too; every size flag takes human sizes.
func TestUnitsOnTheCommandLine(t *testing.T) {
	addr, c := startServer(t)
	runCLI(t, "", "set", "--server", addr, "--px", "5000", "ms", "v").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "--px", "1h", "hour", "v").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "--px", "200ms", "short", "v").expectCode(t, ExitOK)
	dsstest.Eventually(t, "the key set with --px 200ms to expire", func() bool {
		_, found, err := c.Get(testCtx(t), "short")
		return err == nil && !found
	})
	if _, found, err := c.Get(testCtx(t), "ms"); err != nil || !found {
		t.Fatalf("the key set with --px 5000 is gone at once: %v %v", found, err)
	}
	if r := runCLI(t, "", "get", "--server", addr, "--timeout", "5", "ms"); r.code != ExitError || !strings.Contains(r.err, `--timeout: "5": a duration needs a unit`) {
		t.Fatalf("--timeout 5: exit %d, %q", r.code, r.err)
	}
	got := printed(t, "--max-packet-size", "16MiB", "--max-value-size", "1.5MiB", "--max-store-bytes", "1GiB", "--snapshot-after", "65536")
	for name, want := range map[string]string{"max-packet-size": "16MiB", "max-value-size": "1536KiB", "max-store-bytes": "1GiB", "snapshot-after": "64KiB", "max-key-size": "16KiB"} {
		if got[name][0] != want {
			t.Errorf("config print: %s = %q, want %q", name, got[name][0], want)
		}
	}
}

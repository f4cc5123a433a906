package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dss recover of a data directory that does not exist says so, and makes
// nothing.
func TestRecoverCmdWithoutADataDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	r := runCLI(t, "", "recover", "--data", dir).expectCode(t, ExitError)
	if want := "dss: --data " + dir + ": no such data directory\n"; r.err != want {
		t.Fatalf("stderr %q, want %q", r.err, want)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("dss recover made the missing data directory")
	}
	r = runCLI(t, "", "recover", "--data", t.TempDir()).expectCode(t, ExitOK)
	if !strings.HasPrefix(r.out, "nothing is damaged in ") {
		t.Fatalf("an empty data directory: stdout %q", r.out)
	}
}

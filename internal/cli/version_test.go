package cli

import (
	"encoding/json"
	"testing"

	"github.com/dssio/dss/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	want := buildinfo.Get().String() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		r := runCLI(t, "", args...).expectCode(t, ExitOK)
		if r.out != want || r.err != "" {
			t.Fatalf("%v: stdout %q stderr %q, want %q", args, r.out, r.err, want)
		}
	}
	r := runCLI(t, "", "version", "--json").expectCode(t, ExitOK)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("json %q: %v", r.out, err)
	}
	in := buildinfo.Get()
	if out["version"] != in.Version || out["commit"] != in.Commit || out["go"] != in.GoVersion {
		t.Fatalf("json %v, want %+v", out, in)
	}
}

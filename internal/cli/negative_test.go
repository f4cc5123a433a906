package cli

import (
	"slices"
	"testing"
)

func TestNegativeArgs(t *testing.T) {
	root := newRoot(Stdio{})
	for _, tc := range []struct{ in, want []string }{
		{[]string{"set", "temp", "-5"}, []string{"set", "--", "temp", "-5"}},
		{[]string{"set", "--server", "h:1", "temp", "-5", "--json"}, []string{"set", "--server", "h:1", "--json", "--", "temp", "-5"}},
		{[]string{"set", "-5", "-0.5"}, []string{"set", "--", "-5", "-0.5"}},
		{[]string{"set", "--px=10s", "t", "-1e3"}, []string{"set", "--px=10s", "--", "t", "-1e3"}},
		// Unchanged: no negative number, a flag's value, after the
		// user's own --, and dss lock's own --.
		{[]string{"set", "temp", "5"}, []string{"set", "temp", "5"}},
		{[]string{"serve", "--max-keys", "-1"}, []string{"serve", "--max-keys", "-1"}},
		{[]string{"set", "--", "temp", "-5"}, []string{"set", "--", "temp", "-5"}},
		{[]string{"lock", "l", "--", "sleep", "-1"}, []string{"lock", "l", "--", "sleep", "-1"}},
	} {
		if got := negativeArgs(root, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("negativeArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// dss set temp -5 stores -5; -- works as before.
func TestNegativeValues(t *testing.T) {
	addr, _ := startServer(t)
	runCLI(t, "", "set", "temp", "-5", "--server", addr).expectCode(t, ExitOK)
	if r := runCLI(t, "", "get", "temp", "--server", addr).expectCode(t, ExitOK); r.out != "-5" {
		t.Fatalf("get temp: %q", r.out)
	}
	runCLI(t, "", "set", "--server", addr, "--", "temp", "-6").expectCode(t, ExitOK)
	runCLI(t, "", "vdel", "--server", addr, "temp", "-6").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "-7", "-8").expectCode(t, ExitOK)
	if r := runCLI(t, "", "get", "--server", addr, "-7").expectCode(t, ExitOK); r.out != "-8" {
		t.Fatalf("get -7: %q", r.out)
	}
}

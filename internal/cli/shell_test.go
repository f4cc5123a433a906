package cli

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitLine(t *testing.T) {
	for in, want := range map[string][]string{
		"set a 1":                     {"set", "a", "1"},
		"  set   'a b'  \"c \\\" d\"": {"set", "a b", `c " d`},
		`set a\ b c`:                  {"set", "a b", "c"},
		"get k # a comment":           {"get", "k"},
		"# only a comment":            nil,
		"set k ''":                    {"set", "k", ""},
		"set k -5":                    {"set", "k", "-5"},
	} {
		if got, err := splitLine(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("splitLine(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"set 'a", `set "a`, `set a\`} {
		if _, err := splitLine(in); err == nil {
			t.Errorf("splitLine(%q): no error", in)
		}
	}
}

// Without a terminal the shell runs the commands of its input in turn,
// with its own flags as their defaults, and exits with the last status.
func TestShellScript(t *testing.T) {
	addr, _ := startServer(t)
	r := runCLI(t, "set a 1\nget a\n\n# comment\nset 'b c' -5\nget 'b c'\nget missing\n", "shell", "--server", addr)
	if r.code != ExitFalse || r.out != "1-5" {
		t.Fatalf("shell script: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	r = runCLI(t, "get a\nexit\nget missing\n", "shell", "--server", addr)
	if r.code != ExitOK || r.out != "1" {
		t.Fatalf("exit in a script: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	if r := runCLI(t, "shell\n", "shell", "--server", addr); r.code != ExitError || !strings.Contains(r.err, "already in the shell") {
		t.Fatalf("a shell in the shell: %d %q", r.code, r.err)
	}
	// dss alone without a terminal prints the help, as before.
	if r := runCLI(t, ""); r.code != ExitOK || !strings.Contains(r.out, "Available Commands") {
		t.Fatalf("dss alone into a pipe: exit %d, %q", r.code, r.out)
	}
}

func TestShellCompleter(t *testing.T) {
	complete := shellCompleter(newRoot(Stdio{}))
	for line, want := range map[string]string{"se": "set ", "get --st": "get --stale ", "cluster st": "cluster status ", "ex": "exit", "set --p": "set --persist "} {
		if got := complete(line); !slices.Contains(got, want) {
			t.Errorf("complete(%q) = %q, want %q among them", line, got, want)
		}
	}
}

// dss completion writes the completion scripts the docs describe.
func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_dss", "zsh": "#compdef dss", "fish": "complete -c dss", "powershell": "Register-ArgumentCompleter"} {
		if r := runCLI(t, "", "completion", shell).expectCode(t, ExitOK); !strings.Contains(r.out, marker) {
			t.Errorf("dss completion %s: no %q in its output", shell, marker)
		}
	}
}

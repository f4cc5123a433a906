package cli

import (
	"strings"
	"testing"
)

// A command given the wrong number of arguments says what it takes.
func TestArgumentErrorsShowUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get"}, "accepts 1 arg(s), received 0 (usage: dss get KEY [flags])\n"},
		{[]string{"set", "k"}, "(usage: dss set KEY VALUE [flags])\n"},
		{[]string{"watch"}, "(usage: dss watch [KEY...] [--pattern PATTERN]... [flags])\n"},
		{[]string{"keys", "a", "b"}, "(usage: dss keys [PATTERN] [flags])\n"},
		{[]string{"snapshot", "save"}, "(usage: dss snapshot save FILE"},
		{[]string{"passwd", "users"}, "(usage: dss passwd FILE NAME [flags])\n"},
	} {
		r := runCLI(t, "", tc.args...).expectCode(t, ExitError)
		if !strings.HasPrefix(r.err, "dss: ") || !strings.Contains(r.err, tc.want) || r.out != "" {
			t.Errorf("dss %s: stderr %q, want it to hold %q; stdout %q", strings.Join(tc.args, " "), r.err, tc.want, r.out)
		}
	}
}

package cli

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// readmeFlagTable returns the flags named in the first column of the
// README's table of dss serve flags.
func readmeFlagTable(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| flag | default |")
	if !ok {
		t.Fatal("README.md has no table of dss serve flags (| flag | default |)")
	}
	name := regexp.MustCompile("`--([a-z0-9-]+)`")
	var flags []string
	for i, line := range strings.Split(table, "\n") {
		if i == 0 {
			continue // the rest of the header row
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			flags = append(flags, m[1])
		}
	}
	return flags
}

// The README's flag table lists every flag of dss serve, and only those.
func TestReadmeListsEveryServeFlag(t *testing.T) {
	documented := readmeFlagTable(t)
	var flags []string
	newServeCmd(Stdio{}).Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			flags = append(flags, f.Name)
		}
	})
	for _, f := range flags {
		if !slices.Contains(documented, f) {
			t.Errorf("dss serve --%s is not in the README's flag table", f)
		}
	}
	for _, f := range documented {
		if !slices.Contains(flags, f) {
			t.Errorf("the README's flag table lists --%s, which dss serve does not have", f)
		}
	}
	if len(documented) == 0 {
		t.Fatal("no flags found in the README's table")
	}
}

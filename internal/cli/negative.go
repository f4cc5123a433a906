package cli

import (
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// negativeNumber is an argument that is a negative number: -5, -0.5,
// -1e3.
var negativeNumber = regexp.MustCompile(`^-[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// negativeArgs lets a negative number through as a positional argument
// (dss set temp -5), which the flag parser would otherwise take for a
// shorthand flag (no dss flag has a digit for shorthand). When a
// positional argument is one, the arguments are put in the order the
// parser reads unambiguously: the command path, the flags with their
// values, "--", the positional arguments in their order. A negative
// number that is a flag's value (--max-keys -1) stays with its flag, and
// anything after a "--" of the user's stays positional. Commands that
// give "--" a meaning of their own (dss lock NAME -- COMMAND) are left
// alone.
func negativeArgs(root *cobra.Command, args []string) []string {
	if !hasNegative(args) {
		return args
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root || cmd.Name() == "lock" {
		return args
	}
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	var flags, positional []string
	found := false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			positional = append(positional, rest[i+1:]...)
			i = len(rest)
		case negativeNumber.MatchString(a):
			positional = append(positional, a)
			found = true
		case strings.HasPrefix(a, "--"):
			flags = append(flags, a)
			if name, _, hasValue := strings.Cut(a[2:], "="); !hasValue {
				if f := lookup(name); f != nil && f.NoOptDefVal == "" && i+1 < len(rest) {
					flags = append(flags, rest[i+1])
					i++
				}
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			if len(a) == 2 {
				if f := cmd.Flags().ShorthandLookup(a[1:]); f != nil && f.NoOptDefVal == "" && i+1 < len(rest) {
					flags = append(flags, rest[i+1])
					i++
				}
			}
		default:
			positional = append(positional, a)
		}
	}
	if !found {
		return args
	}
	out := strings.Fields(cmd.CommandPath())[1:]
	out = append(out, flags...)
	out = append(out, "--")
	return append(out, positional...)
}

func hasNegative(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if negativeNumber.MatchString(a) {
			return true
		}
	}
	return false
}

package cli

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// enumValue is a flag that takes one of a fixed set of words, so that a
// wrong word is refused with the list whether it comes from the command
// line, the environment or the configuration file.
type enumValue struct {
	value   *string
	allowed []string
}

// enumFlag defines a flag whose value is one of allowed.
func enumFlag(fs *pflag.FlagSet, p *string, name, def string, allowed []string, usage string) {
	*p = def
	fs.Var(&enumValue{value: p, allowed: allowed}, name, usage)
}

func (e *enumValue) String() string { return *e.value }

func (e *enumValue) Type() string { return "string" }

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return &enumError{allowed: e.allowed}
	}
	*e.value = s
	return nil
}

func (e *enumValue) accepted() string { return (&enumError{allowed: e.allowed}).accepted() }

// enumError is a word that is not one of the allowed.
type enumError struct{ allowed []string }

func (e *enumError) Error() string { return "want " + e.accepted() }

// accepted lists the words: "a, b or c".
func (e *enumError) accepted() string {
	switch n := len(e.allowed); n {
	case 0:
		return "nothing"
	case 1:
		return e.allowed[0]
	default:
		return strings.Join(e.allowed[:n-1], ", ") + " or " + e.allowed[n-1]
	}
}

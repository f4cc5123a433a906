package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// One syntax for every time flag and one for every size flag, whether the
// value comes from the command line, the environment or the file.

// durationValue is a time flag: a Go duration (500ms, 10s, 1m30s, 1h).
// A flag that once took a bare number (set --px, milliseconds) still takes
// one, in that unit (legacy); elsewhere a bare number other than 0 is
// refused, as its unit would be a guess.
type durationValue struct {
	p      *time.Duration
	legacy time.Duration // the unit of a bare number; 0: none accepted
}

// durationFlag defines a time flag.
func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(&durationValue{p: p}, name, usage)
}

// legacyDurationFlag defines a time flag that also takes a bare number
// of unit.
func legacyDurationFlag(fs *pflag.FlagSet, p *time.Duration, name string, def, unit time.Duration, usage string) {
	*p = def
	fs.Var(&durationValue{p: p, legacy: unit}, name, usage)
}

func (d *durationValue) String() string { return d.p.String() }

func (d *durationValue) Type() string { return "duration" }

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s, d.legacy)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// parseDuration reads a duration, or a bare number of legacy (when not 0).
func parseDuration(s string, legacy time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		switch {
		case n == 0:
			return 0, nil
		case legacy != 0:
			if n > math.MaxInt64/int64(legacy) || n < math.MinInt64/int64(legacy) {
				return 0, &validationError{"too long a duration"}
			}
			return time.Duration(n) * legacy, nil
		}
		return 0, &validationError{fmt.Sprintf("a duration needs a unit: %ds, %dms or %dm, for instance", n, n, n)}
	}
	return time.ParseDuration(s)
}

// sizeValue is a size flag: a number of bytes, with or without a unit:
// 65536, 64KiB, 64MiB, 1GiB, 1.5GiB, 64KB (1000s), 64K or 64M (1024s, as
// dd and Docker read them). Sizes that -1 turns off take -1.
type sizeValue[T int | int64 | uint32] struct{ p *T }

// sizeFlag defines a size flag.
func sizeFlag[T int | int64 | uint32](fs *pflag.FlagSet, p *T, name string, def T, usage string) {
	*p = def
	fs.Var(&sizeValue[T]{p: p}, name, usage)
}

func (s *sizeValue[T]) String() string { return formatSize(int64(*s.p)) }

func (s *sizeValue[T]) Type() string { return "size" }

func (s *sizeValue[T]) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		if n < 0 {
			return &validationError{"want a size of 0 or more"}
		}
		return &validationError{"too large a size"}
	}
	*s.p = T(n)
	return nil
}

// sizeUnits are the units parseSize reads, in lower case.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "ki": 1 << 10, "kb": 1000,
	"m": 1 << 20, "mib": 1 << 20, "mi": 1 << 20, "mb": 1000 * 1000,
	"g": 1 << 30, "gib": 1 << 30, "gi": 1 << 30, "gb": 1000 * 1000 * 1000,
	"t": 1 << 40, "tib": 1 << 40, "ti": 1 << 40, "tb": 1000 * 1000 * 1000 * 1000,
}

// parseSize reads a size (see sizeValue).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] == '-' || t[i] == '.' || t[i] >= '0' && t[i] <= '9') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("not a size")
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n > math.MaxInt64/mult || n < math.MinInt64/mult {
			return 0, &validationError{"too large a size"}
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || unit == "" || unit == "b" {
		return 0, fmt.Errorf("not a size")
	}
	v := f * float64(mult)
	if v != math.Trunc(v) || math.Abs(v) > math.MaxInt64/2 {
		return 0, &validationError{"not a whole number of bytes"}
	}
	return int64(v), nil
}

// formatSize writes a size the way parseSize reads it, in the largest
// binary unit that divides it.
func formatSize(n int64) string {
	if n <= 0 {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

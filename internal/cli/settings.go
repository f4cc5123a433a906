package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The settings of dss serve are its flags. Each also comes from the
// environment (DSS_ and the flag name in upper case, '-' as '_') and from
// a YAML file named by --config (or DSS_CONFIG) whose keys are the flag
// names. A setting takes the first of: the command line, the environment,
// the file, the flag's default. Nothing here knows the flags one by one:
// a flag added to dss serve is a setting in all three places at once.

// configFlag is the flag that names the configuration file.
const configFlag = "config"

// secretAnnotation marks a flag whose value dss config print masks.
const secretAnnotation = "dss-secret"

// Where a setting's value came from.
const (
	sourceDefault = "default"
	sourceFlag    = "flag"
	sourceEnv     = "env"
	sourceFile    = "file"
)

// settings is the outcome of resolving a command's flags.
type settings struct {
	file    string            // the configuration file, "" for none
	sources map[string]string // by flag name: sourceDefault, ...
}

// addConfigFlag adds --config to cmd.
func addConfigFlag(cmd *cobra.Command) {
	cmd.Flags().String(configFlag, "", "YAML file of settings whose keys are these flags' names (listen: 127.0.0.1:1883); flags and DSS_ environment variables take precedence over it")
}

// markSecret makes dss config print mask the value of the flag name.
// Flags whose names say password, secret or token are masked without it,
// unless they name a file (-file, -path): a path is no secret, and
// showing it is what the operator needs.
func markSecret(fs *pflag.FlagSet, name string) {
	_ = fs.SetAnnotation(name, secretAnnotation, []string{"true"})
}

func isSecret(f *pflag.Flag) bool {
	if _, ok := f.Annotations[secretAnnotation]; ok {
		return true
	}
	if strings.HasSuffix(f.Name, "-file") || strings.HasSuffix(f.Name, "-path") {
		return false
	}
	for _, word := range []string{"password", "secret", "token"} {
		if strings.Contains(f.Name, word) {
			return true
		}
	}
	return false
}

// resolveSettings gives every flag of cmd not set on the command line its
// value from the environment or, failing that, from the configuration file.
func resolveSettings(cmd *cobra.Command) (*settings, error) {
	fs := cmd.Flags()
	st := &settings{sources: make(map[string]string)}
	if f := fs.Lookup(configFlag); f != nil {
		st.file = f.Value.String()
		if !f.Changed {
			st.file = os.Getenv(envName(configFlag))
		}
	}
	var file map[string]*yaml.Node
	if st.file != "" {
		var err error
		if file, err = readConfigFile(fs, st.file); err != nil {
			return nil, err
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Changed:
			st.sources[f.Name] = sourceFlag
		case f.Name == configFlag:
			if st.file != "" {
				st.sources[f.Name] = sourceEnv
				_ = fs.Set(f.Name, st.file)
			} else {
				st.sources[f.Name] = sourceDefault
			}
		case hasEnv(f.Name):
			st.sources[f.Name] = sourceEnv
			if err := fs.Set(f.Name, os.Getenv(envName(f.Name))); err != nil {
				errs = append(errs, settingError("environment variable "+envName(f.Name), f, os.Getenv(envName(f.Name)), err))
			}
		case file[f.Name] != nil:
			st.sources[f.Name] = sourceFile
			if err := setFromNode(fs, f, file[f.Name]); err != nil {
				errs = append(errs, fmt.Errorf("config file %s: %w", st.file, err))
			}
		default:
			st.sources[f.Name] = sourceDefault
		}
	})
	return st, errors.Join(errs...)
}

func hasEnv(flag string) bool {
	_, ok := os.LookupEnv(envName(flag))
	return ok
}

// readConfigFile reads a YAML mapping of flag names to values. A key that
// names no flag is an error.
func readConfigFile(fs *pflag.FlagSet, path string) (map[string]*yaml.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	out := make(map[string]*yaml.Node)
	if doc.Kind == 0 { // empty file
		return out, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s: line %d: want a YAML mapping of setting names to values, one a line (listen: 127.0.0.1:1883)", path, root.Line)
	}
	var unknown []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		f := fs.Lookup(k.Value)
		switch {
		case f == nil || k.Value == configFlag || f.Hidden:
			unknown = append(unknown, fmt.Sprintf("line %d: unknown setting %q", k.Line, k.Value))
		case out[k.Value] != nil:
			return nil, fmt.Errorf("config file %s: line %d: %q is set twice", path, k.Line, k.Value)
		default:
			out[k.Value] = v
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("config file %s: %s (the settings are the flags of dss serve --help, without the dashes)", path, strings.Join(unknown, "; "))
	}
	return out, nil
}

// setFromNode sets flag f from a value of the configuration file.
func setFromNode(fs *pflag.FlagSet, f *pflag.Flag, v *yaml.Node) error {
	where := fmt.Sprintf("line %d: %s", v.Line, f.Name)
	switch v.Kind {
	case yaml.ScalarNode:
		if sv, ok := f.Value.(pflag.SliceValue); ok && v.Tag != "!!null" {
			if err := sv.Replace([]string{v.Value}); err != nil {
				return settingError(where, f, v.Value, err)
			}
			return nil
		}
		value := v.Value
		if v.Tag == "!!null" {
			value = ""
		}
		if err := fs.Set(f.Name, value); err != nil {
			return settingError(where, f, value, err)
		}
		return nil
	case yaml.SequenceNode:
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return fmt.Errorf("%s: a list where one value is wanted: %s", where, acceptedValues(f))
		}
		items := make([]string, len(v.Content))
		for i, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s: line %d: want a plain value in the list", where, it.Line)
			}
			items[i] = it.Value
		}
		if err := sv.Replace(items); err != nil {
			return settingError(where, f, strings.Join(items, ","), err)
		}
		return nil
	}
	return fmt.Errorf("%s: want a value (%s), not a mapping", where, acceptedValues(f))
}

// settingError says which setting got which value, and what it accepts.
func settingError(where string, f *pflag.Flag, value string, err error) error {
	var ev *enumError
	if errors.As(err, &ev) {
		return fmt.Errorf("%s: %q is not one of %s", where, value, ev.accepted())
	}
	var ve *validationError
	if errors.As(err, &ve) {
		return fmt.Errorf("%s: %q: %s", where, value, ve.msg)
	}
	return fmt.Errorf("%s: %q is not %s", where, value, acceptedValues(f))
}

// acceptedValues describes the values a flag accepts, by its type.
func acceptedValues(f *pflag.Flag) string {
	if e, ok := f.Value.(*enumValue); ok {
		return "one of " + e.accepted()
	}
	switch t := f.Value.Type(); t {
	case "bool":
		return "true or false"
	case "int", "int8", "int16", "int32", "int64":
		return "an integer"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number (0 or more)"
	case "float32", "float64":
		return "a number"
	case "duration":
		return "a duration such as 500ms, 10s, 1m or 1h30m"
	case "size":
		return "a size such as 65536, 64KiB, 64MiB or 1GiB"
	case "stringSlice", "stringArray":
		return "a list of values"
	default:
		return "a " + t
	}
}

// flagError rewrites pflag's error for a bad value on the command line in
// the same words as one from the environment or the file.
func flagError(_ *cobra.Command, err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		return settingError("--"+iv.GetFlag().Name, iv.GetFlag(), iv.GetValue(), iv.Unwrap())
	}
	return err
}

// validationError is a value that parses but cannot work; the flag's
// value types return it.
type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

// configEntries lists the settings of fs in name order, with their
// effective values and where they came from; secrets are masked.
func configEntries(fs *pflag.FlagSet, st *settings) []configEntry {
	var out []configEntry
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		e := configEntry{flag: f, source: st.sources[f.Name]}
		if e.source == "" {
			e.source = sourceDefault
		}
		out = append(out, e)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].flag.Name < out[j].flag.Name })
	return out
}

// configEntry is one setting as dss config print shows it.
type configEntry struct {
	flag   *pflag.Flag
	source string
}

// masked is the value dss config print shows for a secret that is set.
const masked = "********"

// node returns the setting's value as YAML, typed as the flag is.
func (e configEntry) node() *yaml.Node {
	f := e.flag
	if isSecret(f) && f.Value.String() != "" && f.Value.String() != "[]" {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: masked}
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range sv.GetSlice() {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
		}
		return n
	}
	tag := "!!str"
	switch f.Value.Type() {
	case "bool":
		tag = "!!bool"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		tag = "!!int"
	case "float32", "float64":
		tag = "!!float"
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: f.Value.String()}
}

// comment says where the value came from.
func (e configEntry) comment() string {
	switch e.source {
	case sourceEnv:
		return "from " + envName(e.flag.Name)
	case sourceFile:
		return "from the config file"
	case sourceFlag:
		return "from --" + e.flag.Name
	}
	return "default"
}

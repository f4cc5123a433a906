// Package cli implements the dss command line: the server (dss serve), the
// client commands and the load generator. main only calls Run.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dssio/dss/internal/buildinfo"
)

// Stdio is where a command reads and writes.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Exit statuses of the client commands.
const (
	ExitOK    = 0 // success
	ExitFalse = 1 // the key is missing or a condition was not met
	ExitError = 2 // an error; its text is on stderr
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error // nil: nothing to print
	// quiet shows err only when standard output is a terminal: a
	// condition a script reads from the exit status (a missing key, a
	// condition not met) is explained to a person, and a pipe gets the
	// same bytes as ever.
	quiet bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// Run runs the dss command line with args (without the program name) and
// returns the process exit status.
func Run(ctx context.Context, args []string, stdio Stdio) int {
	root := newRoot(stdio)
	root.SetArgs(negativeArgs(root, args))
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && (!ee.quiet || isTerminal(stdio.Out)) {
			fmt.Fprintln(stdio.Err, "dss:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stdio.Err, "dss:", err)
	return ExitError
}

func newRoot(stdio Stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "dss",
		Short: "An MQTT 5 broker with a built-in, durable key-value state store",
		Long: `dss is one binary that is an MQTT 5 broker with a key-value state store built
in. The store speaks the state store protocol over MQTT 5 request/response
(SET, GET, DEL, VDEL and KEYNOTIFY), so MQTT 5 clients and the vendor's
state store client libraries work against it unchanged.

Every flag can also be set with an environment variable: DSS_ and the flag
name in upper case with '-' as '_', e.g. DSS_LISTEN=:1884. dss serve also
reads a YAML file of settings (--config); see dss serve --help.`,
		Version:       buildinfo.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	// dss alone: the shell on a terminal, the help elsewhere.
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if in, ok := stdio.In.(*os.File); ok && isTerminal(in) && isTerminal(stdio.Out) {
			if code := runShell(cmd.Context(), stdio); code != ExitOK {
				return &exitError{code: code}
			}
			return nil
		}
		return cmd.Help()
	}
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newVersionCmd(stdio))
	root.AddCommand(newServeCmd(stdio), newAttachCmd(stdio))
	root.AddCommand(newRecoverCmd(stdio), newPasswdCmd(stdio), newSnapshotCmd(stdio))
	root.AddCommand(newSetCmd(stdio), newGetCmd(stdio), newDelCmd(stdio), newVDelCmd(stdio))
	root.AddCommand(newWatchCmd(stdio), newLockCmd(stdio), newKeysCmd(stdio))
	root.AddCommand(newPubCmd(stdio), newSubCmd(stdio), newShellCmd(stdio))
	root.AddCommand(newBenchCmd(stdio))
	root.AddCommand(newConfigCmd(stdio), newReadyCmd(stdio))
	root.AddCommand(newClusterCmd(stdio))
	argsWithUsage(root)
	return root
}

// argsWithUsage makes the argument checks of cmd and its subcommands end
// their errors with the command's usage line, so that a command given
// too few or too many arguments says what it takes.
func argsWithUsage(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return fmt.Errorf("%w (usage: %s)", err, c.UseLine())
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		argsWithUsage(sub)
	}
}

// bindEnv gives every flag of cmd that was not set on the command line the
// value of its environment variable DSS_<NAME>, if that is set.
func bindEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := flagEnvName(f)
		if v, ok := os.LookupEnv(name); ok {
			if e := cmd.Flags().Set(f.Name, v); e != nil {
				err = settingError("environment variable "+name, f, v, e)
			}
		}
	})
	return err
}

func envName(flag string) string {
	b := []byte("DSS_" + flag)
	for i, c := range b {
		switch {
		case c == '-':
			b[i] = '_'
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// shellPrompt is the prompt of dss shell.
const shellPrompt = "dss> "

func newShellCmd(stdio Stdio) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "shell",
		Short: "Run dss commands interactively, with line editing and history",
		Long: `Read dss commands and run them, one a line, as if each followed "dss " on
the command line: set greeting hello, get greeting, watch k, pub t m,
cluster status, ... Quotes and backslashes work as in a POSIX shell
('a b', "a b", a\ b); a line starting with # is a comment. exit, quit or
Ctrl-D end the shell.

On a terminal the line can be edited (arrows, Ctrl-A, Ctrl-E, Ctrl-W,
...), Up and Down and Ctrl-R search the history, which is kept in
~/.dss_history (DSS_HISTORY names another file; empty keeps none), and
Tab completes command and flag names. Ctrl-C clears the line at the
prompt, and ends the running command (a watch, a sub) without ending the
shell. dss with no command on a terminal starts the shell.

The shell's --server, --timeout, TLS and login flags are the default of
every command it runs (as their environment variables are).

On a terminal the shell exits 0. Without one it reads the commands from
standard input, runs them in turn, and exits with the status of the last
one.`,
		Example: `  dss shell --server node1:1883
  printf 'set a 1\nget a\n' | dss shell`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restore, err := shellDefaults(cmd.Flags())
			if err != nil {
				return err
			}
			defer restore()
			code := runShell(cmd.Context(), stdio)
			if code != ExitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	addClientFlags(cmd, &f, false, "how long each command waits for the server and its answer")
	return cmd
}

// shellDefaults makes the shell's own flags given on the command line the
// defaults of the commands it runs, through their environment variables,
// and returns what puts the environment back.
func shellDefaults(fs *pflag.FlagSet) (func(), error) {
	var undo []func()
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		name := flagEnvName(fl)
		old, had := os.LookupEnv(name)
		if e := os.Setenv(name, fl.Value.String()); e != nil {
			err = e
			return
		}
		undo = append(undo, func() {
			if had {
				_ = os.Setenv(name, old)
			} else {
				_ = os.Unsetenv(name)
			}
		})
	})
	return func() {
		for _, u := range slices.Backward(undo) {
			u()
		}
	}, err
}

// runShell reads and runs commands until the input ends or exit, and
// returns the exit status of the last command.
func runShell(ctx context.Context, stdio Stdio) int {
	in, ok := stdio.In.(*os.File)
	if ok && isTerminal(in) && isTerminal(stdio.Out) {
		return interactiveShell(ctx, stdio)
	}
	// A script: one command a line, stopping with the input or the
	// context.
	last := ExitOK
	sc := bufio.NewScanner(stdio.In)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() && ctx.Err() == nil {
		code, quit := shellLine(ctx, stdio, sc.Text())
		if quit {
			break
		}
		if code >= 0 {
			last = code
		}
	}
	return last
}

// shellLine runs one line; code is -1 for a line with no command, quit
// asks the shell to end.
func shellLine(ctx context.Context, stdio Stdio, line string) (code int, quit bool) {
	args, err := splitLine(line)
	if err != nil {
		fmt.Fprintln(stdio.Err, "dss:", err)
		return ExitError, false
	}
	if len(args) == 0 {
		return -1, false
	}
	switch args[0] {
	case "exit", "quit":
		return ExitOK, true
	case "shell":
		fmt.Fprintln(stdio.Err, "dss: already in the shell")
		return ExitError, false
	}
	// The commands read standard input only for a value of "-": in the
	// shell that is the terminal, or the rest of a script.
	return Run(ctx, args, stdio), false
}

// interactiveShell is the shell on a terminal: line editing, history and
// completion (github.com/peterh/liner), and ^C for the running command
// only.
func interactiveShell(ctx context.Context, stdio Stdio) int {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetTabCompletionStyle(liner.TabPrints)
	ln.SetCompleter(shellCompleter(newRoot(stdio)))
	history := shellHistoryFile()
	if history != "" {
		if f, err := os.Open(history); err == nil {
			_, _ = ln.ReadHistory(f)
			f.Close()
		}
	}
	// dss's main cancels ctx on the first SIGINT or SIGTERM; the shell
	// outlives a ^C that ends one command, so it watches the signals
	// itself. At the prompt the terminal turns ^C into a key.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	base := context.WithoutCancel(ctx)
	fmt.Fprintln(stdio.Out, "dss shell: dss commands without \"dss\"; help, exit or Ctrl-D to leave")
	for {
		line, err := ln.Prompt(shellPrompt)
		if errors.Is(err, liner.ErrPromptAborted) {
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			fmt.Fprintln(stdio.Out)
			break
		}
		if strings.TrimSpace(line) != "" {
			ln.AppendHistory(line)
		}
		cctx, cancel := context.WithCancel(base)
		terminated := make(chan bool, 1)
		go func() {
			select {
			case s := <-sigs:
				terminated <- s == syscall.SIGTERM
				cancel()
			case <-cctx.Done():
				terminated <- false
			}
		}()
		_, quit := shellLine(cctx, stdio, line)
		cancel()
		if <-terminated {
			quit = true
		}
		if quit {
			break
		}
	}
	if history != "" {
		if f, err := os.OpenFile(history, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
			_, _ = ln.WriteHistory(f)
			f.Close()
		}
	}
	// Each command reported its own failure; leaving the shell is not one.
	return ExitOK
}

// shellHistoryFile is where the shell keeps its history: DSS_HISTORY, or
// ~/.dss_history; "" for none.
func shellHistoryFile() string {
	if f, ok := os.LookupEnv("DSS_HISTORY"); ok {
		return f
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".dss_history")
}

// shellCompleter completes command names, then the flags of the command.
func shellCompleter(root *cobra.Command) liner.Completer {
	return func(line string) []string {
		args, err := splitLine(line)
		if err != nil {
			return nil
		}
		word := ""
		if len(args) > 0 && !strings.HasSuffix(line, " ") {
			word, args = args[len(args)-1], args[:len(args)-1]
		}
		prefix := line[:len(line)-len(word)]
		var out []string
		if len(args) == 0 {
			for _, c := range root.Commands() {
				if !c.Hidden && strings.HasPrefix(c.Name(), word) {
					out = append(out, prefix+c.Name()+" ")
				}
			}
			for _, b := range []string{"exit", "quit"} {
				if strings.HasPrefix(b, word) {
					out = append(out, prefix+b)
				}
			}
			return out
		}
		cmd, _, err := root.Find(args)
		if err != nil || !strings.HasPrefix(word, "-") {
			if err == nil && cmd.HasSubCommands() {
				for _, c := range cmd.Commands() {
					if !c.Hidden && strings.HasPrefix(c.Name(), word) {
						out = append(out, prefix+c.Name()+" ")
					}
				}
			}
			return out
		}
		visit := func(fl *pflag.Flag) {
			if !fl.Hidden && strings.HasPrefix("--"+fl.Name, word) {
				out = append(out, prefix+"--"+fl.Name+" ")
			}
		}
		cmd.Flags().VisitAll(visit)
		cmd.InheritedFlags().VisitAll(visit)
		return out
	}
}

// splitLine splits a line into words as a POSIX shell does, for quotes
// and backslashes only: 'single' keeps everything, "double" lets \ escape
// " and \, a \ outside quotes escapes the next character, and a # that
// starts a word starts a comment.
func splitLine(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil
		case c == '\\':
			if i+1 == len(line) {
				return nil, errors.New("a line may not end with \\")
			}
			i++
			w.WriteByte(line[i])
			inWord = true
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
					i++
				}
				w.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, errors.New("unterminated \" quote")
			}
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

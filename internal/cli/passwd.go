package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dssio/dss/internal/auth"
)

func newPasswdCmd(stdio Stdio) *cobra.Command {
	var del bool
	cmd := &cobra.Command{
		Use:   "passwd FILE NAME",
		Short: "Set or delete a user's password in a users file (dss serve --users)",
		Long: `Set the password of user NAME in the users file FILE, creating the file
(mode 0600) if it does not exist; other users' lines stay as they are.
The password is stored as an argon2id hash. On a terminal it is asked for
twice without echo; otherwise the first line of standard input is the
password. A running server reads the file again when it changes, or on
SIGHUP.`,
		Example: `  dss passwd users.txt alice
  printf '%s\n' "$PASSWORD" | dss passwd users.txt line-1
  dss passwd --delete users.txt alice`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			file, name := args[0], args[1]
			if del {
				return auth.DeleteUser(file, name)
			}
			if err := auth.ValidUserName(name); err != nil {
				return err
			}
			pw, err := readNewPassword(stdio, name)
			if err != nil {
				return err
			}
			return auth.SetPassword(file, name, pw)
		},
	}
	cmd.Flags().BoolVar(&del, "delete", false, "delete the user instead")
	return cmd
}

// readNewPassword asks for the password twice on a terminal, or reads
// the first line of standard input.
func readNewPassword(stdio Stdio, name string) ([]byte, error) {
	if f, ok := stdio.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stdio.Err, "Password for %s: ", name)
		pw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stdio.Err)
		if err != nil {
			return nil, fmt.Errorf("read the password: %w", err)
		}
		fmt.Fprint(stdio.Err, "Again: ")
		again, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stdio.Err)
		if err != nil {
			return nil, fmt.Errorf("read the password: %w", err)
		}
		if !bytes.Equal(pw, again) {
			return nil, errors.New("the passwords do not match")
		}
		if len(pw) == 0 {
			return nil, errors.New("the password is empty")
		}
		return pw, nil
	}
	if stdio.In == nil {
		return nil, errors.New("no password: standard input is empty")
	}
	line, err := bufio.NewReader(stdio.In).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the password: %w", err)
	}
	pw := bytes.TrimRight(line, "\r\n")
	if len(pw) == 0 {
		return nil, errors.New("no password: the first line of standard input is empty")
	}
	return pw, nil
}

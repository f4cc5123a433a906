package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/journal"
)

func newRecoverCmd(stdio Stdio) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Make a data directory with a damaged journal usable again",
		Long: `When dss serve refuses to start because a journal or snapshot file is
damaged (the error names the file and the offset), dss recover keeps
everything before the damage and moves the rest aside into a new directory
damaged-<time> inside the data directory:

  - a damaged snapshot is moved aside (an older intact one is used instead;
    keys that no later journal record rewrites are lost);
  - a damaged journal segment is cut at the damage, after a copy of the whole
    file is put aside, and every later segment is moved aside.

The changes after the damage are lost: copy the data directory first if they
matter. The server must not be running. A record cut short at the very end of
the journal (a crash during a write) needs no recovery: the server discards it
on start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			actions, err := journal.Repair(dir)
			for _, a := range actions {
				fmt.Fprintln(stdio.Out, a)
			}
			if err != nil {
				return err
			}
			if len(actions) == 0 {
				fmt.Fprintln(stdio.Out, "nothing is damaged in", dir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data", "dss-data", "data directory to recover")
	return cmd
}

package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newVDelCmd(stdio Stdio) *cobra.Command {
	var (
		f       clientFlags
		fencing fencingFlag
	)
	cmd := &cobra.Command{
		Use:   "vdel KEY VALUE",
		Short: "Delete a key only if it holds a value",
		Long: `Delete KEY only if it holds VALUE (compare and delete). A VALUE of - reads
the value from standard input. A key that a lock protects needs
--fencing-token. With --json, "mismatch" tells a key that holds another
value from a missing one.

Exit status: 0 deleted, 1 no such key or another value, 2 error.`,
		Example: `  dss vdel leader node-1`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			fence, err := fencing.token()
			if err != nil {
				return err
			}
			value, err := readValue(args[1], stdio.In)
			if err != nil {
				return err
			}
			key := args[0]
			return f.runClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				res, err := c.VDel(ctx, key, value, client.FencingToken(fence))
				if err != nil {
					return err
				}
				return printDel(stdio, &f, key, res)
			})
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and its answer")
	fencing.add(cmd)
	return cmd
}

package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newDelCmd(stdio Stdio) *cobra.Command {
	var (
		f       clientFlags
		fencing fencingFlag
	)
	cmd := &cobra.Command{
		Use:   "del KEY",
		Short: "Delete a key",
		Long: `Delete KEY. A key that a lock protects needs --fencing-token.

Exit status: 0 deleted, 1 no such key, 2 error.`,
		Example: `  dss del greeting`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			fence, err := fencing.token()
			if err != nil {
				return err
			}
			key := args[0]
			return f.runClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				res, err := c.Del(ctx, key, client.FencingToken(fence))
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

// printDel reports the outcome of del and vdel.
func printDel(stdio Stdio, f *clientFlags, key string, res client.DelResult) error {
	if f.json {
		o := jsonObject{"deleted": res.Deleted, "mismatch": res.Mismatch}.bytes("key", []byte(key)).version(res.Version)
		if err := o.write(stdio.Out); err != nil {
			return err
		}
	}
	switch {
	case res.Mismatch:
		return notMet("not deleted: key %q holds another value", key)
	case !res.Deleted:
		return notMet("no key %q", key)
	}
	return nil
}

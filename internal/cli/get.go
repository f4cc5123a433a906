package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newGetCmd(stdio Stdio) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Print the value of a key",
		Long: `Print the value stored under KEY, byte for byte, with nothing added. With
--json, print {"key":..., "found":..., "value":..., "version":...}; a value
that is not valid UTF-8 comes as "value_base64".

Exit status: 0 found, 1 no such key, 2 error.`,
		Example: `  dss get greeting
  dss get --json greeting
  dss get photo > photo.jpg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			key := args[0]
			return f.runClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				e, found, err := c.Get(ctx, key)
				if err != nil {
					return err
				}
				switch {
				case f.json:
					o := jsonObject{"found": found}.bytes("key", []byte(key)).version(e.Version)
					if found {
						o.bytes("value", e.Value)
					}
					err = o.write(stdio.Out)
				case found:
					_, err = stdio.Out.Write(e.Value)
				}
				if err != nil {
					return err
				}
				if !found {
					return errFalse
				}
				return nil
			})
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and its answer")
	return cmd
}

package cli

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newGetCmd(stdio Stdio) *cobra.Command {
	var f clientFlags
	var stale bool
	cmd := &cobra.Command{
		Use:   "get KEY",
		Short: "Print the value of a key",
		Long: `Print the value stored under KEY. Into a pipe or a file the value is
written byte for byte, with nothing added, and a missing key prints nothing;
on a terminal a newline follows the value, and a missing key is reported on
standard error.

With --json, print {"key":..., "found":..., "value":..., "version":...,
"ttl_ms":..., "encoding":...}: "ttl_ms" is the time the key has left in
milliseconds (absent when it does not expire); "encoding" is "utf8" when
the key and value are written as text, "base64" when they are
base64-encoded because one of them is not valid UTF-8.

With --stale, a cluster node answers from its own copy at once, without
confirming with the leader that it is current: the read may miss the
latest writes, and a node cut off from the majority still answers.

Exit status: 0 found, 1 no such key, 2 error.`,
		Example: `  dss get greeting
  dss get --json greeting
  dss get --stale --server node2:1883 greeting
  dss get photo > photo.jpg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			key := args[0]
			return f.runClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				var opts []client.GetOption
				if stale {
					opts = append(opts, client.StaleRead)
				}
				e, found, err := c.Get(ctx, key, opts...)
				if err != nil {
					return err
				}
				tty := isTerminal(stdio.Out)
				switch {
				case f.json:
					o := jsonObject{"found": found}.bytes("key", []byte(key)).version(e.Version)
					if found {
						o.bytes("value", e.Value)
						if e.TTL > 0 {
							o["ttl_ms"] = e.TTL.Milliseconds()
						}
					}
					err = o.write(stdio.Out)
				case found && tty && !bytes.HasSuffix(e.Value, []byte("\n")):
					// A prompt does not run on after the value.
					_, err = stdio.Out.Write(append(e.Value[:len(e.Value):len(e.Value)], '\n'))
				case found:
					_, err = stdio.Out.Write(e.Value)
				}
				if err != nil {
					return err
				}
				if !found {
					return notMet("no key %q", key)
				}
				return nil
			})
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and its answer")
	cmd.Flags().BoolVar(&stale, "stale", false, "on a cluster, read the node's own copy at once (may miss the latest writes)")
	return cmd
}

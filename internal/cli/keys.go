package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newKeysCmd(stdio Stdio) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "keys [PATTERN]",
		Short: "List the keys that match a pattern",
		Long: `List the keys that match the glob PATTERN (default *), one per line, in
no particular order. PATTERN is matched against the whole key as UTF-8
text: * any run of characters (also /), ? one character, [abc], [a-z] and
[!a-z] one character of a set; a wildcard in a set is literal ([*]). A key
that is not valid UTF-8 is never listed. Pipe to sort for an order.

Each key is one line: a backslash is written as \\, a newline, carriage
return and tab as \n, \r and \t, any other byte that is not printable UTF-8
as \xHH. With --json, one object per line: {"key":..., "encoding":...},
"encoding" being "utf8" or "base64".

The server answers a page of keys at a time (SCAN, as the vendor's clients
list keys; see docs/protocol.md): a key present for the whole listing is
listed once, one created, deleted or expiring meanwhile may or may not be.

Exit status: 0 when a key matched, 1 when none did, 2 error.`,
		Example: `  dss keys
  dss keys 'sensor/*'
  dss keys --json 'lock/?'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			pattern := "*"
			if len(args) == 1 {
				pattern = args[0]
			}
			return f.runClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				n := 0
				for key, err := range c.Keys(ctx, pattern) {
					if err != nil {
						return err
					}
					n++
					if f.json {
						err = (jsonObject{}).bytes("key", []byte(key)).write(stdio.Out)
					} else {
						_, err = stdio.Out.Write(append(appendEscaped(nil, []byte(key), false), '\n'))
					}
					if err != nil {
						return err
					}
				}
				if n == 0 {
					return notMet("no key matches %q", pattern)
				}
				return nil
			})
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and the whole listing")
	return cmd
}

package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newSetCmd(stdio Stdio) *cobra.Command {
	var (
		f       clientFlags
		nx, nex bool
		px      time.Duration
		persist bool
		fencing fencingFlag
	)
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Store a value under a key",
		Long: `Store VALUE under KEY. A VALUE of - reads the value from standard input, so
any bytes can be stored: dss set photo - < photo.jpg. A value that starts
with '-' goes after --: dss set temp -- -5.

--nx stores only if the key does not exist, --nex only if it does not exist
or already holds VALUE. --px gives the key a time to live: a duration such
as 10s, 1m or 500ms, or a bare number of milliseconds (--px 10000), as the
protocol's PX counts.
--fencing-token writes a key that a lock protects (see dss lock, which
passes the token to its command in DSS_FENCING_TOKEN, where this flag
picks it up). --persist asks for the key to survive a restart (the user
property aio-persistence: true): a server run with --persistence flagged
keeps only the keys whose last SET carried it.

Exit status: 0 stored, 1 not stored because of --nx or --nex, 2 error.`,
		Example: `  dss set greeting hello
  dss set --nx --px 10s leader node-1
  echo '{"on":true}' | dss set config -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			if nx && nex {
				return errors.New("--nx and --nex exclude each other")
			}
			if px < 0 {
				return errors.New("--px must be a positive duration, such as 10s or 500ms")
			}
			fence, err := fencing.token()
			if err != nil {
				return err
			}
			value, err := readValue(args[1], stdio.In)
			if err != nil {
				return err
			}
			var opts []client.SetOption
			switch {
			case nx:
				opts = append(opts, client.IfMissing)
			case nex:
				opts = append(opts, client.IfMissingOrEqual)
			}
			if px > 0 {
				opts = append(opts, client.TTL(px))
			}
			if !fence.IsZero() {
				opts = append(opts, client.FencingToken(fence))
			}
			if persist {
				opts = append(opts, client.Persist)
			}
			key := args[0]
			return f.runClient(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				res, err := c.Set(ctx, key, value, opts...)
				if err != nil {
					return err
				}
				if f.json {
					if err := (jsonObject{"applied": res.Applied}).bytes("key", []byte(key)).version(res.Version).write(stdio.Out); err != nil {
						return err
					}
				}
				switch {
				case !res.Applied && nx:
					return notMet("not set: key %q exists", key)
				case !res.Applied:
					return notMet("not set: key %q holds another value", key)
				}
				return nil
			})
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and its answer")
	cmd.Flags().BoolVar(&nx, "nx", false, "store only if the key does not exist")
	cmd.Flags().BoolVar(&nex, "nex", false, "store only if the key does not exist or already holds VALUE")
	legacyDurationFlag(cmd.Flags(), &px, "px", 0, time.Millisecond, "time to live, such as 10s or 1m; a bare number is milliseconds, as in the protocol's PX (0: none; removes an earlier one)")
	cmd.Flags().BoolVar(&persist, "persist", false, "ask for the key to survive a restart (aio-persistence: true; matters with dss serve --persistence flagged)")
	fencing.add(cmd)
	return cmd
}

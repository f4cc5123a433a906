package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newWatchCmd(stdio Stdio) *cobra.Command {
	var (
		f       clientFlags
		current bool
	)
	cmd := &cobra.Command{
		Use:   "watch KEY...",
		Short: "Print the changes of keys until interrupted",
		Long: `Watch the KEYs (KEYNOTIFY) and print each change until interrupted:

  KEY SET VALUE
  KEY DELETE

One change is one line: in KEY and VALUE a backslash is written as \\, a
newline, carriage return and tab as \n, \r and \t, and any other byte that
is not printable UTF-8 as \xHH; a space in KEY is written \x20.

With --json, one object per line: {"key":..., "op":"SET"|"DELETE",
"value":..., "version":..., "resync":..., "encoding":...}, where
"encoding" is "utf8" (key and value as text) or "base64" (both
base64-encoded, because one is not valid UTF-8).

--current prints each key's current state first. The watch survives
reconnects and fails over between the --server list; after a reconnect it
prints each key's current state again (with "resync":true in JSON), since
changes made while it was away were not seen one by one.

Exit status: 0 when interrupted, 2 on an error.`,
		Example: `  dss watch setpoint
  dss watch --json --current door/1 door/2`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, keys []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx := cmd.Context()
			w, c, err := startWatch(ctx, &f, keys, current)
			if err != nil {
				return err
			}
			defer c.Close()
			defer func() {
				sctx, cancel := f.withTimeout(context.WithoutCancel(ctx))
				defer cancel()
				_ = w.Stop(sctx)
			}()
			for {
				select {
				case e, ok := <-w.Events():
					if !ok {
						return fmt.Errorf("watch: %w", w.Err())
					}
					if err := printEvent(stdio, &f, e); err != nil {
						return err
					}
				case <-ctx.Done():
					return nil
				}
			}
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and the registration")
	cmd.Flags().BoolVar(&current, "current", false, "print each key's current state first")
	return cmd
}

// startWatch connects and registers the watch within --timeout.
func startWatch(ctx context.Context, f *clientFlags, keys []string, current bool) (*client.Watch, *client.Client, error) {
	sctx, cancel := f.withTimeout(ctx)
	defer cancel()
	c, err := f.dial(sctx)
	if err != nil {
		return nil, nil, err
	}
	var opts []client.WatchOption
	if current {
		opts = append(opts, client.InitialState)
	}
	w, err := c.Watch(sctx, keys, opts...)
	if err != nil {
		_ = c.Close()
		return nil, nil, f.explain(err)
	}
	return w, c, nil
}

func printEvent(stdio Stdio, f *clientFlags, e client.Event) error {
	if f.json {
		o := jsonObject{"op": e.Op.String(), "resync": e.Resync}.bytes("key", []byte(e.Key)).version(e.Version)
		if e.Op == client.OpSet {
			o.bytes("value", e.Value)
		}
		return o.write(stdio.Out)
	}
	line := appendEscaped(nil, []byte(e.Key), true)
	line = append(line, ' ')
	line = append(line, e.Op.String()...)
	if e.Op == client.OpSet {
		line = append(line, ' ')
		line = appendEscaped(line, e.Value, false)
	}
	line = append(line, '\n')
	_, err := stdio.Out.Write(line)
	return err
}

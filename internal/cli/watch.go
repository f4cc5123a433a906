package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

func newWatchCmd(stdio Stdio) *cobra.Command {
	var (
		f        clientFlags
		current  bool
		patterns []string
	)
	cmd := &cobra.Command{
		Use:   "watch [KEY...] [--pattern PATTERN]...",
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

--pattern watches every key that PATTERN matches (dss's extension of
KEYNOTIFY; patterns as for dss keys: * ? [abc] [a-z] [!a-z], matched
against the whole key as UTF-8). After a reconnect it prints
"PATTERN MISSED" ("op":"MISSED" in JSON): changes made while it was away
were not seen; list the keys to catch up. --current does not apply to
patterns. A change of a key that several of the watches cover prints once.

Exit status: 0 when interrupted, 2 on an error.`,
		Example: `  dss watch setpoint
  dss watch --json --current door/1 door/2
  dss watch --pattern 'sensor/*'`,
		Args: func(_ *cobra.Command, keys []string) error {
			if len(keys) == 0 && len(patterns) == 0 {
				return errors.New("requires at least 1 KEY or a --pattern")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, keys []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			ctx := cmd.Context()
			ws, c, err := startWatches(ctx, &f, keys, patterns, current)
			if err != nil {
				return err
			}
			defer c.Close()
			defer func() {
				sctx, cancel := f.withTimeout(context.WithoutCancel(ctx))
				defer cancel()
				for _, w := range ws {
					_ = w.Stop(sctx)
				}
			}()
			return printEvents(ctx, stdio, &f, ws)
		},
	}
	addClientFlags(cmd, &f, true, "how long to wait for the server and the registration")
	cmd.Flags().BoolVar(&current, "current", false, "print each key's current state first")
	cmd.Flags().StringArrayVar(&patterns, "pattern", nil, "watch every key that `PATTERN` matches (may be repeated)")
	return cmd
}

// startWatches connects and registers the watches, of the keys and of
// each pattern, within --timeout.
func startWatches(ctx context.Context, f *clientFlags, keys, patterns []string, current bool) ([]*client.Watch, *client.Client, error) {
	sctx, cancel := f.withTimeout(ctx)
	defer cancel()
	c, err := f.dial(sctx)
	if err != nil {
		return nil, nil, err
	}
	var ws []*client.Watch
	fail := func(err error) ([]*client.Watch, *client.Client, error) {
		_ = c.Close() // ends the watches too
		return nil, nil, f.explain(err)
	}
	if len(keys) > 0 {
		var opts []client.WatchOption
		if current {
			opts = append(opts, client.InitialState)
		}
		w, err := c.Watch(sctx, keys, opts...)
		if err != nil {
			return fail(err)
		}
		ws = append(ws, w)
	}
	for _, p := range patterns {
		w, err := c.WatchPattern(sctx, p)
		if err != nil {
			return fail(err)
		}
		ws = append(ws, w)
	}
	return ws, c, nil
}

// printEvents prints the events of ws until ctx ends or a watch fails. A
// change that several watches report (a key watched by name and by a
// pattern) prints once.
func printEvents(ctx context.Context, stdio Stdio, f *clientFlags, ws []*client.Watch) error {
	type tagged struct {
		w  *client.Watch
		e  client.Event
		ok bool
	}
	in := make(chan tagged)
	for _, w := range ws {
		go func() {
			for {
				e, ok := <-w.Events()
				select {
				case in <- tagged{w, e, ok}:
				case <-ctx.Done():
					return
				}
				if !ok {
					return
				}
			}
		}()
	}
	printed := map[string]bool{} // the changes printed lately, by key and version
	for {
		select {
		case t := <-in:
			if !t.ok {
				return fmt.Errorf("watch: %w", t.w.Err())
			}
			e := t.e
			if e.Op == client.OpMissed {
				e.Key = t.w.Pattern()
			} else if !e.Resync && !e.Version.IsZero() && len(ws) > 1 {
				id := e.Op.String() + " " + e.Version.String() + " " + e.Key
				if printed[id] {
					continue
				}
				if len(printed) >= 4096 {
					clear(printed)
				}
				printed[id] = true
			}
			if err := printEvent(stdio, f, e); err != nil {
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
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

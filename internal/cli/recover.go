package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/internal/journal"
)

func newRecoverCmd(stdio Stdio) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Make a data directory with a damaged journal usable again",
		Long: `When dss serve refuses to start because a journal or snapshot file is
damaged (the error names the file and the offset), dss recover keeps every
intact record: it reads the newest snapshot and the journal after it, and past
each damaged region goes on at the next intact record (every record carries
its length and a CRC-32C). From what it read it writes a new snapshot, which
replaces the old snapshot and journal files; those are kept, unchanged, in a
new directory damaged-<time> inside the data directory.

Changes are applied in order, so a key deleted after the damage stays
deleted, and versions issued afterwards stay above every version read and
above the time the damaged files were last written. What the damaged records
held is lost: a key whose latest change was in them is missing, older than it
was, or back although it was deleted. dss recover names those keys where the
damaged records can still be parsed, and reports how many records and keys it
kept and dropped.

The server must not be running. The new snapshot needs as much free space as
the state it holds. A record cut short at the very end of the journal (a crash
during a write) needs no recovery: the server cuts it off on start, after
copying it to a directory torn-<time>.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("--data %s: no such data directory", dir)
			}
			r, err := journal.Repair(dir)
			if r != nil {
				printReport(stdio.Out, dir, r)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "data", "dss-data", "data directory to recover")
	return cmd
}

// printReport prints what dss recover found, did, kept and dropped.
func printReport(w io.Writer, dir string, r *journal.Report) {
	if len(r.Damage) == 0 {
		fmt.Fprintln(w, "nothing is damaged in", dir)
		return
	}
	for _, d := range r.Damage {
		fmt.Fprintln(w, "damaged:", d)
	}
	for _, a := range r.Actions {
		fmt.Fprintln(w, a)
	}
	fmt.Fprintf(w, "kept %d records; the state holds %d keys\n", r.RecordsKept, r.KeysKept)
	if r.DroppedUnknown {
		fmt.Fprintf(w, "dropped at least %d records in %d damaged bytes: the damage reaches the end of a file, so how many records it held is not known\n", r.RecordsDropped, r.DamagedBytes)
	} else {
		fmt.Fprintf(w, "dropped %d records in %d damaged bytes\n", r.RecordsDropped, r.DamagedBytes)
	}
	fmt.Fprintf(w, "keys whose latest state was dropped, as far as the damaged records name them: %d\n", len(r.KeysDropped))
	const show = 20
	for i, k := range r.KeysDropped {
		if i == show {
			fmt.Fprintf(w, "  ... and %d more\n", len(r.KeysDropped)-show)
			break
		}
		fmt.Fprintf(w, "  %q\n", k)
	}
}

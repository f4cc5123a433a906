package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/server"
)

func newSnapshotCmd(stdio Stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up a running server's store, and restore a backup",
		Long: `dss snapshot save copies the store of a running server into one file without
stopping it; dss snapshot restore makes a data directory hold that copy.`,
	}
	cmd.AddCommand(newSnapshotSaveCmd(stdio), newSnapshotRestoreCmd(stdio))
	return cmd
}

func newSnapshotSaveCmd(stdio Stdio) *cobra.Command {
	var endpoint httpEndpoint
	var tokenFile string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "save FILE --http HOST:PORT",
		Short: "Save a consistent backup of a running server's store into FILE",
		Long: `dss snapshot save fetches a backup from a running server's HTTP endpoint (its
--http-listen address, not the MQTT listener) and writes it to FILE ("-" for
standard output). The server keeps serving meanwhile; the backup holds the
store exactly as it was at one moment during the save, so every change
acknowledged before the save began is in it.

The backup is checked whole as it arrives (every record's checksum, the
count in its footer) and FILE appears only once it is complete: a save that
fails leaves no FILE behind. Without an admin token the server gives backups
to clients on its own machine only; with --admin-token-file on the server,
give the same file here with --token-file (or DSS_TOKEN_FILE).

Restore it with dss snapshot restore FILE --data DIR.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			url, err := endpoint.url(cmd.Flags(), stdio.Err, server.SnapshotPath)
			if err != nil {
				return err
			}
			token, err := readAdminToken("--token-file", tokenFile)
			if err != nil {
				return err
			}
			info, err := saveSnapshot(cmd.Context(), url, token, timeout, args[0], stdio.Out)
			if err != nil {
				return err
			}
			if args[0] != "-" {
				fmt.Fprintf(stdio.Out, "saved %d records up to change %d (%d bytes) to %s\n", info.Records, info.Seq, info.Bytes, args[0])
			}
			return nil
		},
	}
	// --server (DSS_HTTP_SERVER) was this flag's name before --http.
	endpoint.add(cmd.Flags(), "", "server", "DSS_HTTP_SERVER")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the server's admin token (its --admin-token-file)")
	durationFlag(cmd.Flags(), &timeout, "timeout", 10*time.Second, "how long to wait for the server to answer before the backup streams (0: no limit)")
	return cmd
}

// saveSnapshot fetches a backup from url into file, and checks it as it
// arrives.
func saveSnapshot(ctx context.Context, url, token string, timeout time.Duration, file string, stdout io.Writer) (journal.BackupInfo, error) {
	var info journal.BackupInfo
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), server.SnapshotPath)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return info, fmt.Errorf("--http %s: %w", addr, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: timeout}).DialContext,
		ResponseHeaderTimeout: timeout,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return info, fmt.Errorf("backup from %s: %w (--http is the server's HTTP endpoint, its --http-listen)", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return info, fmt.Errorf("backup from %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(msg)))
	}
	if file == "-" {
		info, err = journal.ReadBackup(io.TeeReader(resp.Body, stdout), nil)
		return info, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return info, err
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	w := bufio.NewWriterSize(tmp, 1<<20)
	info, err = journal.ReadBackup(bufio.NewReaderSize(io.TeeReader(resp.Body, w), 1<<20), nil)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return info, fmt.Errorf("backup from %s: %w", addr, err)
	}
	return info, nil
}

func newSnapshotRestoreCmd(stdio Stdio) *cobra.Command {
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore FILE --data DIR",
		Short: "Make a data directory hold the store of a backup",
		Long: `dss snapshot restore reads the backup FILE (made by dss snapshot save), checks
it whole, and only then writes it into the data directory DIR, from which
dss serve --data DIR starts with exactly the backed-up store.

DIR must be missing or empty. With --force a DIR that holds a store is
replaced: its journal and snapshot files are moved into a new directory
replaced-<time> inside it, not deleted. The server must not be running on
DIR.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			r, err := journal.Restore(args[0], dir, force)
			if errors.Is(err, journal.ErrNotEmpty) {
				return fmt.Errorf("%w; give --force to replace it (its files are kept in a directory replaced-<time>)", err)
			}
			if err != nil {
				return err
			}
			abs, _ := filepath.Abs(dir)
			fmt.Fprintf(stdio.Out, "restored %d keys up to change %d from %s into %s\n", r.Keys, r.Seq, args[0], abs)
			if r.Replaced != "" {
				fmt.Fprintf(stdio.Out, "the files it replaced are in %s\n", r.Replaced)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data", "dss-data", "data directory to restore into")
	cmd.Flags().BoolVar(&force, "force", false, "replace a data directory that holds a store (its files are kept aside)")
	return cmd
}

// readAdminToken reads the admin token from file ("" for none), given by
// the flag named flag.
// minAdminToken is the shortest admin token the server accepts.
const minAdminToken = 16

func readAdminToken(flag, file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < minAdminToken {
		return "", fmt.Errorf("%s: %s holds a token of %d characters: want %d or more", flag, file, len(token), minAdminToken)
	}
	return token, nil
}

// envAnnotation gives a flag an environment variable other than the one
// its name makes: dss snapshot save's --server is an HTTP address, which
// DSS_SERVER (the MQTT address of the client commands) must not set.
const envAnnotation = "dss-env"

func setEnvName(f *pflag.Flag, name string) {
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[envAnnotation] = []string{name}
}

// flagEnvName returns the environment variable of the flag f.
func flagEnvName(f *pflag.Flag) string {
	if v := f.Annotations[envAnnotation]; len(v) == 1 {
		return v[0]
	}
	return envName(f.Name)
}

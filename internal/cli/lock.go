package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dssio/dss/client"
)

// killGrace is how long a command gets to exit after SIGTERM before it is
// killed.
const killGrace = 10 * time.Second

func newLockCmd(stdio Stdio) *cobra.Command {
	var (
		f    clientFlags
		ttl  time.Duration
		wait time.Duration
		try  bool
	)
	cmd := &cobra.Command{
		Use:   "lock NAME -- COMMAND [ARG...]",
		Short: "Run a command while holding a lock",
		Long: `Take the lock NAME (the key NAME, set with NEX and a time to live), run
COMMAND while holding it, renewing it in the background, and release it
when COMMAND exits. dss waits for the lock as long as --wait allows; with
--try it gives up at once if another holder has it.

COMMAND gets these environment variables:
  DSS_FENCING_TOKEN  the lock's fencing token: the version of the lock key
  DSS_LOCK_NAME      NAME
  DSS_SERVER         the --server list
so that dss set, del and vdel run by COMMAND write protected keys with the
token without further flags, and a stale holder's writes are refused.

If the lock is lost (it expired before a renewal got through, or another
holder took it), COMMAND gets SIGTERM and dss exits with status 2. On
SIGINT or SIGTERM dss passes SIGTERM to COMMAND, waits for it, and releases
the lock.

Exit status: COMMAND's status (128+N if it died of signal N); 1 if the lock
was held by another holder (--try) or --wait ran out; 2 on an error.`,
		Example: `  dss lock backup -- ./backup.sh
  dss lock --try --ttl 30s jobs/compactor -- sh -c 'dss set --nx jobs/state running'`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			if dash := cmd.ArgsLenAtDash(); dash > 1 {
				return fmt.Errorf("lock takes one NAME before --, got %q", args[:dash])
			}
			if ttl < time.Millisecond {
				return fmt.Errorf("--ttl %v: want at least 1ms", ttl)
			}
			return runLocked(cmd.Context(), stdio, &f, args[0], args[1:], ttl, wait, try)
		},
	}
	addClientFlags(cmd, &f, false, "how long to wait for the server, and for the release at the end")
	durationFlag(cmd.Flags(), &ttl, "ttl", client.DefaultLockTTL, "the lock's time to live; it is renewed every third of it")
	durationFlag(cmd.Flags(), &wait, "wait", 0, "how long to wait for the lock (0: as long as it takes)")
	cmd.Flags().BoolVar(&try, "try", false, "do not wait: exit with status 1 if the lock is held")
	return cmd
}

func runLocked(ctx context.Context, stdio Stdio, f *clientFlags, name string, argv []string, ttl, wait time.Duration, try bool) error {
	dctx, cancel := f.withTimeout(ctx)
	c, err := f.dial(dctx)
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()

	lease, err := acquire(ctx, f, c, name, ttl, wait, try)
	if err != nil {
		return f.explain(err)
	}
	status, runErr := runUnderLease(ctx, stdio, f, lease, argv)

	rctx, cancel := f.withTimeout(context.WithoutCancel(ctx))
	defer cancel()
	relErr := lease.Release(rctx)
	switch {
	case runErr != nil:
		return runErr
	case relErr != nil && errors.Is(relErr, client.ErrLeaseLost):
		return &exitError{code: ExitError, err: relErr}
	case relErr != nil:
		// The command ran under the lock; the lock expires by itself.
		fmt.Fprintln(stdio.Err, "dss: warning:", f.explain(relErr))
	}
	if status != 0 {
		return &exitError{code: status}
	}
	return nil
}

// acquire takes the lock, as --wait and --try say.
func acquire(ctx context.Context, f *clientFlags, c *client.Client, name string, ttl, wait time.Duration, try bool) (*client.Lease, error) {
	if try {
		tctx, cancel := f.withTimeout(ctx)
		defer cancel()
		l, held, err := c.TryLock(tctx, name, client.TTL(ttl))
		if err != nil {
			return nil, err
		}
		if !held {
			return nil, &exitError{code: ExitFalse, err: fmt.Errorf("lock %q is held by another holder", name)}
		}
		return l, nil
	}
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, wait)
	}
	defer cancel()
	l, err := c.Lock(wctx, name, client.TTL(ttl))
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, &exitError{code: ExitFalse, err: fmt.Errorf("lock %q still held after --wait %v", name, wait)}
	}
	return l, err
}

// runUnderLease runs argv and returns its exit status. It ends the command
// if the lease is lost (returning an error) or ctx ends.
func runUnderLease(ctx context.Context, stdio Stdio, f *clientFlags, lease *client.Lease, argv []string) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(),
		"DSS_FENCING_TOKEN="+lease.Token().String(),
		"DSS_LOCK_NAME="+lease.Name(),
		"DSS_SERVER="+strings.Join(f.servers(), ","),
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("run %s: %w", argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var lost error
	var err error
	select {
	case err = <-exited:
	case <-lease.Done():
		lost = lease.Err()
		fmt.Fprintf(stdio.Err, "dss: %v; stopping %s\n", lost, argv[0])
		err = stop(cmd, exited)
	case <-ctx.Done():
		err = stop(cmd, exited)
	}
	status := exitStatus(err)
	if status < 0 {
		return 0, fmt.Errorf("run %s: %w", argv[0], err)
	}
	if lost != nil {
		return status, &exitError{code: ExitError}
	}
	return status, nil
}

// stop sends SIGTERM to the command, and SIGKILL if it has not exited
// after killGrace; it returns the command's Wait error.
func stop(cmd *exec.Cmd, exited <-chan error) error {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = cmd.Process.Kill()
	}
	select {
	case err := <-exited:
		return err
	case <-time.After(killGrace):
		_ = cmd.Process.Kill()
		return <-exited
	}
}

// exitStatus turns a command's Wait error into a shell's exit status, or
// -1 if the command did not run to an exit.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

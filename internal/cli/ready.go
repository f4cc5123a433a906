package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newReadyCmd(stdio Stdio) *cobra.Command {
	var (
		endpoint httpEndpoint
		timeout  time.Duration
		wait     bool
	)
	cmd := &cobra.Command{
		Use:   "ready",
		Short: "Check whether a server is ready (its /readyz), as a health check",
		Long: `Ask the server's HTTP endpoint (dss serve --http-listen) whether the server
is ready: its state is recovered, its listeners accept clients, it is not
shutting down, its journal works and, in a cluster, it knows a leader
(dss attach: it is connected to its broker and subscribed).
Nothing is printed when it is ready; otherwise the reason goes to standard
error. With --wait, ask again until it is ready or --timeout passes, and
then report the last answer.

This is the health check of the container image, which has no shell or
HTTP client of its own.

Exit status: 0 ready, 1 not ready, 2 no answer.`,
		Example: `  dss ready --http 127.0.0.1:9090
  dss ready --http 127.0.0.1:9090 --wait --timeout 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bindEnv(cmd); err != nil {
				return err
			}
			url, err := endpoint.url(cmd.Flags(), stdio.Err, "/readyz")
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			// last is the last answer: a probe that the end of the wait
			// cut short says less than the answer before it.
			var last error
			for {
				err := probeReady(ctx, url)
				if err == nil {
					return nil
				}
				if last == nil || !errors.Is(err, ctx.Err()) {
					last = err
				}
				if wait {
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
						continue
					}
				}
				var nr notReady
				if errors.As(last, &nr) {
					return &exitError{code: ExitFalse, err: last}
				}
				return last
			}
		},
	}
	endpoint.add(cmd.Flags(), "127.0.0.1:9090", "", "")
	durationFlag(cmd.Flags(), &timeout, "timeout", 3*time.Second, "how long to wait for the answer (with --wait: for readiness)")
	cmd.Flags().BoolVar(&wait, "wait", false, "ask again until the server is ready or --timeout passes")
	return cmd
}

// notReady is a server's answer that it is not ready.
type notReady string

func (n notReady) Error() string { return string(n) }

// probeReady asks url, a /readyz, once.
func probeReady(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode == http.StatusOK {
		return nil
	}
	return notReady(strings.TrimSpace(string(body)))
}

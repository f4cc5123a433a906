// Command dss is an MQTT 5 broker with a built-in, durable key-value state
// store, and the command-line client and load generator for it.
//
// main only runs the command line (internal/cli). What dss serve changes
// about the process itself, the Go runtime's garbage collector and
// threads, is in internal/tuning, with the reasons.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/dssio/dss/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

// Command setpoint is a device that follows a set-point kept in the store,
// for example the target temperature of a thermostat: it reads the current
// value at start, then applies every change as it happens. The watch
// survives reconnects and server failover; after each reconnect it reports
// the set-point's current state again (a Resync event), so a change made
// while the device was offline is applied as soon as it is back.
//
// Run "setpoint" on the device and "setpoint -set 21.5" (or
// "dss set examples/setpoint 21.5") anywhere to change the set-point.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"

	"github.com/dssio/dss/client"
)

func main() {
	server := flag.String("server", envOr("DSS_SERVER", "localhost:1883"), "server address HOST:PORT, or a comma-separated list (env DSS_SERVER)")
	key := flag.String("key", "examples/setpoint", "the set-point's key")
	set := flag.String("set", "", "set the set-point to this value and exit")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.Dial(ctx, client.Config{Servers: strings.Split(*server, ",")})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if *set != "" {
		if _, err := c.Set(ctx, *key, []byte(*set)); err != nil {
			log.Fatal(err)
		}
		return
	}

	if err := follow(ctx, c, *key, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// follow applies the set-point under key, and every change of it, until
// ctx ends.
func follow(ctx context.Context, c *client.Client, key string, out io.Writer) error {
	w, err := c.Watch(ctx, []string{key}, client.InitialState)
	if err != nil {
		return err
	}
	defer w.Stop(context.WithoutCancel(ctx))
	for {
		select {
		case e, ok := <-w.Events():
			if !ok {
				return fmt.Errorf("watch ended: %w", w.Err())
			}
			apply(out, e)
		case <-ctx.Done():
			return nil
		}
	}
}

// apply is where a real device would act on the new set-point.
func apply(out io.Writer, e client.Event) {
	how := "changed"
	if e.Resync {
		how = "current"
	}
	switch e.Op {
	case client.OpSet:
		fmt.Fprintf(out, "set-point %s: %s\n", how, e.Value)
	case client.OpDelete:
		fmt.Fprintf(out, "set-point %s: none, keeping the last one\n", how)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

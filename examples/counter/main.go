// Command counter increments a counter that many processes share, without
// a lock, in compare-and-swap style:
//
//  1. GET the counter: value n.
//  2. VDEL counter n: delete it only if it still holds n. If another
//     process changed it meanwhile, nothing happens; start again.
//  3. SET counter n+1 NX: create it again with the new value.
//
// Between steps 2 and 3 the key is missing; a process that reads it then
// waits and tries again, since the process that deleted it is about to
// write it back. Only one process can win step 2 for a given n, so no
// increment is lost. If the response to step 3 is lost with the
// connection, the SET is sent again with NEX ("set if missing or already
// equal"), which succeeds whether or not the first one landed.
//
// Run "counter -init" once, then as many "counter -n 100" as you like at
// the same time; the counter ends at the sum. A process that dies between
// steps 2 and 3 leaves the counter missing, and the others wait for it;
// "counter -init" starts it again from 0. When that matters, use a lock
// (see the fencedlock example).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/dssio/dss/client"
)

func main() {
	server := flag.String("server", envOr("DSS_SERVER", "localhost:1883"), "server address HOST:PORT, or a comma-separated list (env DSS_SERVER)")
	key := flag.String("key", "examples/counter", "the counter's key")
	n := flag.Int("n", 10, "how many increments to make")
	initialize := flag.Bool("init", false, "set the counter to 0 if it does not exist, and exit")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.Dial(ctx, client.Config{Servers: strings.Split(*server, ",")})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if *initialize {
		if _, err := c.Set(ctx, *key, []byte("0"), client.IfMissing); err != nil {
			log.Fatal(err)
		}
		return
	}
	for range *n {
		v, err := increment(ctx, c, *key)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v)
	}
}

// increment adds one to the counter under key and returns the new value.
func increment(ctx context.Context, c *client.Client, key string) (int, error) {
	for {
		e, found, err := c.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		if !found {
			// Another process is between its VDEL and its SET.
			if err := pause(ctx); err != nil {
				return 0, fmt.Errorf("%s stays missing (run with -init): %w", key, err)
			}
			continue
		}
		n, err := strconv.Atoi(string(e.Value))
		if err != nil {
			return 0, fmt.Errorf("%s holds %q, not a number", key, e.Value)
		}
		d, err := c.VDel(ctx, key, e.Value)
		if err != nil {
			return 0, err
		}
		if !d.Deleted {
			continue // changed since the GET: try again
		}
		next := []byte(strconv.Itoa(n + 1))
		if err := put(ctx, c, key, next); err != nil {
			return 0, err
		}
		return n + 1, nil
	}
}

// put writes back the new value after a successful VDEL.
func put(ctx context.Context, c *client.Client, key string, value []byte) error {
	res, err := c.Set(ctx, key, value, client.IfMissing)
	for errors.Is(err, client.ErrConnectionLost) {
		// Did the SET land? NEX succeeds either way: the key is still
		// missing, or it already holds our value.
		res, err = c.Set(ctx, key, value, client.IfMissingOrEqual)
	}
	if err != nil {
		return err
	}
	if !res.Applied {
		// Nobody else can write the key while it is missing unless
		// someone ran -init meanwhile.
		return fmt.Errorf("%s was written by someone else during the swap", key)
	}
	return nil
}

// pause waits a little, or until ctx ends.
func pause(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case <-time.After(5 * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

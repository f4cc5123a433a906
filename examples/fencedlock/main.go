// Command fencedlock shows why a lock needs a fencing token. A leased lock
// can expire while its holder is stalled (a long GC pause, a suspended VM,
// a network partition); when the holder wakes up it still believes it
// holds the lock. The fencing token stops it from doing harm: every write
// to the protected key carries the writer's token, and the server refuses
// a token older than the newest one it has seen for that key.
//
// The program plays both holders:
//
//  1. Holder A takes the lock with a short TTL and writes the protected
//     key with its token.
//  2. A stalls: its client goes away and stops renewing, so the lock
//     expires.
//  3. Holder B takes the lock and writes the key with its newer token.
//  4. A wakes up and writes with its old token: the server refuses it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/dssio/dss/client"
)

func main() {
	server := flag.String("server", envOr("DSS_SERVER", "localhost:1883"), "server address HOST:PORT, or a comma-separated list (env DSS_SERVER)")
	lock := flag.String("lock", "examples/leader", "the lock's key")
	key := flag.String("key", "examples/leader-state", "the key the lock protects")
	ttl := flag.Duration("ttl", time.Second, "the lock's time to live")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := client.Config{Servers: strings.Split(*server, ",")}
	if err := run(ctx, cfg, *lock, *key, *ttl); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cfg client.Config, lock, key string, ttl time.Duration) error {
	a, err := client.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	la, err := a.Lock(ctx, lock, client.TTL(ttl))
	if err != nil {
		a.Close()
		return err
	}
	tokenA := la.Token()
	if _, err := a.Set(ctx, key, []byte("written by A"), client.FencingToken(tokenA)); err != nil {
		a.Close()
		return err
	}
	fmt.Printf("A holds %s with token %v and wrote %s\n", lock, tokenA, key)

	a.Close() // A stalls: no more renewals
	fmt.Printf("A stalls; the lock expires after %v\n", ttl)

	b, err := client.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	lb, err := b.Lock(ctx, lock, client.TTL(ttl))
	if err != nil {
		return err
	}
	defer lb.Release(context.WithoutCancel(ctx))
	if _, err := b.Set(ctx, key, []byte("written by B"), client.FencingToken(lb.Token())); err != nil {
		return err
	}
	fmt.Printf("B holds %s with token %v and wrote %s\n", lock, lb.Token(), key)

	// A wakes up, still holding its old token.
	a, err = client.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	_, err = a.Set(ctx, key, []byte("written by A after the stall"), client.FencingToken(tokenA))
	switch {
	case errors.Is(err, client.ErrFencingTokenLowerVersion):
		fmt.Printf("A's late write was refused: %v\n", err)
	case err != nil:
		return err
	default:
		return errors.New("the late write of holder A was accepted: the key is not protected")
	}
	e, _, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	fmt.Printf("%s holds %q\n", key, e.Value)
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

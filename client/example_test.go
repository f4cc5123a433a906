package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"time"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/server"
)

// exampleServer starts a dss server on a free loopback port for the
// examples and returns its address and a function that stops it.
func exampleServer() (addr string, stop func()) {
	s, err := server.New(server.Config{
		Listen: "127.0.0.1:0",
		NodeID: "example",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	return s.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}
}

func Example() {
	addr, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := client.Dial(ctx, client.Config{Servers: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Set(ctx, "greeting", []byte("hello")); err != nil {
		log.Fatal(err)
	}
	e, found, err := c.Get(ctx, "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (found %v)\n", e.Value, found)
	// Output: hello (found true)
}

// A counter that several clients increment without losing updates: read,
// compute, and write back only if nobody wrote in between. The key is
// deleted with VDEL (only if it still holds the value read) and created
// again with NX; if another client got there first, try again.
func ExampleClient_VDel_compareAndSwap() {
	addr, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Servers: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	increment := func() (int, error) {
		for {
			e, found, err := c.Get(ctx, "counter")
			if err != nil {
				return 0, err
			}
			n := 0
			if found {
				if n, err = strconv.Atoi(string(e.Value)); err != nil {
					return 0, err
				}
				d, err := c.VDel(ctx, "counter", e.Value)
				if err != nil {
					return 0, err
				}
				if !d.Deleted {
					continue // changed meanwhile
				}
			}
			r, err := c.Set(ctx, "counter", []byte(strconv.Itoa(n+1)), client.IfMissing)
			if err != nil {
				return 0, err
			}
			if r.Applied {
				return n + 1, nil
			}
		}
	}
	for range 3 {
		n, err := increment()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(n)
	}
	// Output:
	// 1
	// 2
	// 3
}

func ExampleClient_Watch() {
	addr, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Servers: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Set(ctx, "setpoint", []byte("20")); err != nil {
		log.Fatal(err)
	}
	w, err := c.Watch(ctx, []string{"setpoint"}, client.InitialState)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)
	go func() {
		_, _ = c.Set(ctx, "setpoint", []byte("21"))
		_, _ = c.Del(ctx, "setpoint")
	}()
	for range 3 {
		e := <-w.Events()
		fmt.Println(e.Op, string(e.Value), e.Resync)
	}
	// Output:
	// SET 20 true
	// SET 21 false
	// DELETE  false
}

// A lock protects a key with its fencing token: once a new holder has
// written with its token, the writes of a holder whose lease ran out are
// refused.
func ExampleClient_Lock() {
	addr, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Servers: []string{addr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// The first holder's lease runs out (here it releases; a stalled
	// holder's TTL would expire), but it keeps its token.
	first, err := c.Lock(ctx, "jobs/leader", client.TTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	staleToken := first.Token()
	if _, err := c.Set(ctx, "jobs/state", []byte("first"), client.FencingToken(staleToken)); err != nil {
		log.Fatal(err)
	}
	if err := first.Release(ctx); err != nil {
		log.Fatal(err)
	}

	second, err := c.Lock(ctx, "jobs/leader", client.TTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer second.Release(ctx)
	if _, err := c.Set(ctx, "jobs/state", []byte("second"), client.FencingToken(second.Token())); err != nil {
		log.Fatal(err)
	}

	_, err = c.Set(ctx, "jobs/state", []byte("stale"), client.FencingToken(staleToken))
	fmt.Println(errors.Is(err, client.ErrFencingTokenLowerVersion))
	e, _, _ := c.Get(ctx, "jobs/state")
	fmt.Println(string(e.Value))
	// Output:
	// true
	// second
}

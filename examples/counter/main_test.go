package main

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestConcurrentIncrements lets several clients increment at once: the
// compare-and-swap loses no increment.
func TestConcurrentIncrements(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	const workers, each = 4, 25
	clients := make([]*client.Client, workers)
	for i := range clients {
		c, err := client.Dial(ctx, client.Config{Servers: []string{s.Addr()}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	if _, err := clients[0].Set(ctx, "n", []byte("0"), client.IfMissing); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	seen := make(chan int, workers*each)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, err := increment(ctx, c, "n")
				if err != nil {
					t.Error(err)
					return
				}
				seen <- v
			}
		}()
	}
	wg.Wait()
	close(seen)
	got := make(map[int]bool)
	for v := range seen {
		if got[v] {
			t.Fatalf("value %d returned twice: an increment was lost", v)
		}
		got[v] = true
	}
	e, _, err := clients[0].Get(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value) != strconv.Itoa(workers*each) || len(got) != workers*each {
		t.Fatalf("counter %q after %d increments (%d distinct results)", e.Value, workers*each, len(got))
	}
}

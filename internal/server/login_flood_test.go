package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestALoginFloodFromManyAddressesDoesNotDelayACorrectLogin: 48
// addresses (127.0.0.2 and on) send wrong passwords for alice as fast as
// they are answered; alice, from an address without failures, logs in
// while they do, uncached, within a few password checks' time (measured
// meanwhile, on the same busy CPUs): her check goes before those of
// addresses that failed, and does not wait for theirs of the same user.
// It waited behind the whole flood (9 s with 48 addresses), for the
// shared hashing slots and for the lock of her name.
func TestALoginFloodFromManyAddressesDoesNotDelayACorrectLogin(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{
		Users:      usersFile(t, "alice", "alice-pw"),
		LoginDelay: time.Millisecond,
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	const addresses = 48
	for i := range addresses {
		src := fmt.Sprintf("127.0.0.%d", i+2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, ca, err := dsstest.Connect(t, s.Addr(), fmt.Sprintf("mallory-%d", i), dsstest.Login{
					Username: "alice", Password: "guess", LocalAddr: src})
				if err == nil && ca != nil && ca.ReasonCode == 0x86 {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	dsstest.EventuallyWithin(t, time.Minute, "the flood is under way", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failures >= addresses
	})

	// What one password check takes meanwhile, here (the server runs in
	// this process): the bound is counted in those.
	var checks []time.Duration
	for range 3 {
		start := time.Now()
		if _, err := auth.HashPassword([]byte("x")); err != nil {
			t.Fatal(err)
		}
		checks = append(checks, time.Since(start))
	}
	slices.Sort(checks)
	one := checks[1]
	bound := 10 * one
	start := time.Now()
	dsstest.DialWith(t, s.Addr(), "alice", dsstest.Login{Username: "alice", Password: "alice-pw", LocalAddr: "127.0.0.1"})
	if took := time.Since(start); took > bound {
		t.Fatalf("alice's login took %v during a flood of wrong passwords from %d addresses; one password check meanwhile takes %v (bound %v)",
			took, addresses, one, bound)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// A run against a real server sends about the asked rate, each write
// answered and stored.
func TestRunSendsTheRateAskedFor(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	r, err := run(ctx, config{server: s.Addr(), conns: 10, rate: 400, duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// A Poisson count of mean 400 is below 300 or above 500 with a
	// chance of less than one in 10^6.
	if r.writes < 300 || r.writes > 500 {
		t.Fatalf("%d writes in 1 s, want about 400", r.writes)
	}
	if !(0 < r.p50 && r.p50 <= r.p90 && r.p90 <= r.p99 && r.p99 <= r.max) {
		t.Fatalf("percentiles out of order: %v", r)
	}
	c, err := client.Dial(ctx, client.Config{Servers: []string{s.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stored := 0
	for i := range 10 {
		_, found, err := c.Get(ctx, fmt.Sprintf("openload-%d-%d", os.Getpid(), i))
		if err != nil {
			t.Fatal(err)
		}
		if found {
			stored++
		}
	}
	// Each connection writes about 40 times: that one never did has a
	// chance of e^-40.
	if stored != 10 {
		t.Fatalf("%d of the 10 connections' keys stored, want 10", stored)
	}
}

func TestRunRefusesWhatItCannotSend(t *testing.T) {
	for _, cfg := range []config{{conns: 0, rate: 1, duration: time.Second}, {conns: 1, rate: 0, duration: time.Second}, {conns: 1, rate: 1}} {
		if _, err := run(context.Background(), cfg); err == nil {
			t.Fatalf("run(%+v): no error", cfg)
		}
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestFollow(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Servers: []string{s.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Set(ctx, "sp", []byte("20")); err != nil {
		t.Fatal(err)
	}
	var out dsstest.Buffer
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- follow(fctx, c, "sp", &out) }()
	dsstest.Eventually(t, "the current set-point is applied", func() bool {
		return out.String() == "set-point current: 20\n"
	})
	if _, err := c.Set(ctx, "sp", []byte("21.5")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Del(ctx, "sp"); err != nil {
		t.Fatal(err)
	}
	want := "set-point current: 20\nset-point changed: 21.5\nset-point changed: none, keeping the last one\n"
	dsstest.Eventually(t, "the changes are applied", func() bool { return strings.HasPrefix(out.String(), want) })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

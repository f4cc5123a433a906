//go:build linux

package main

import (
	"errors"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestLoadAgainstServer runs the server and the load generator of the
// tool against each other on loopback and checks what the report says.
func TestLoadAgainstServer(t *testing.T) {
	lfd, err := listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	sa, err := boundAddr(lfd)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(lfd, time.Microsecond, 150)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.run() }()
	defer func() {
		s.stop()
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	}()

	r, err := load(loadConfig{
		addr: sa.String(), conns: 16, requestSize: 250, responseSize: 150,
		warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond,
		serverPID: os.Getpid(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Conns != 16 || r.Requests < 100 || r.RequestsPerSecond <= 0 {
		t.Fatalf("report %+v: want 16 connections and at least 100 requests", r)
	}
	if r.Seconds < 0.3 || r.Seconds > 1 {
		t.Errorf("window of %.3f s, want about 0.3", r.Seconds)
	}
	if r.ClientCPU <= 0 || r.ServerCPU <= 0 {
		t.Errorf("CPU per request: client %.2f µs, server %.2f µs, want both above 0", r.ClientCPU, r.ServerCPU)
	}
}

// TestLoadRejectsBadConfig checks the errors of a configuration that
// cannot be run.
func TestLoadRejectsBadConfig(t *testing.T) {
	for _, cfg := range []loadConfig{
		{addr: "not an address", conns: 1, requestSize: 1, responseSize: 1},
		{addr: "[::1]:1", conns: 1, requestSize: 1, responseSize: 1},
		{addr: "127.0.0.1:1", conns: 0, requestSize: 1, responseSize: 1},
	} {
		if _, err := load(cfg); err == nil {
			t.Errorf("load(%+v): no error", cfg)
		}
	}
}

// TestIdleLoadAgainstEachMode holds a few connections in each shape of
// the idle server and checks that the report reads the server's memory
// and that the server holds them (each reads what it is sent, and its
// connections stay open until the load ends).
func TestIdleLoadAgainstEachMode(t *testing.T) {
	for _, mode := range idleModes {
		t.Run(mode, func(t *testing.T) {
			s, err := newIdleServer("127.0.0.1:0", mode)
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- s.run() }()
			defer func() {
				s.close()
				if err := <-served; err != nil {
					t.Errorf("server: %v", err)
				}
			}()
			ap, err := s.addr()
			if err != nil {
				t.Fatal(err)
			}
			r, err := idleLoad(idleLoadConfig{addr: ap.String(), conns: 20, hello: 64, hold: 50 * time.Millisecond, serverPID: os.Getpid()})
			if err != nil {
				t.Fatal(err)
			}
			if r.Connections != 20 || r.RSSStart <= 0 || r.RSSEnd <= 0 {
				t.Fatalf("report %+v: want 20 connections and the server's memory", r)
			}
			for deadline := time.Now().Add(10 * time.Second); s.accepted.Load() < 20; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the server accepted %d connections of 20", s.accepted.Load())
				}
			}
		})
	}
}

// TestIdleServerRefusesAnUnknownMode checks the error of a mode that is
// not one.
func TestIdleServerRefusesAnUnknownMode(t *testing.T) {
	if _, err := newIdleServer("127.0.0.1:0", "threads"); err == nil {
		t.Fatal("no error")
	}
}

// addr is the address the server listens on.
func (s *idleServer) addr() (netip.AddrPort, error) {
	if s.ln != nil {
		return netip.ParseAddrPort(s.ln.Addr().String())
	}
	return boundAddr(s.lfd)
}

// boundAddr is the IPv4 address a socket is bound to.
func boundAddr(fd int) (netip.AddrPort, error) {
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, os.NewSyscallError("getsockname", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		return netip.AddrPort{}, errors.New("not an IPv4 socket")
	}
	return netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)), nil
}

package dsstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// NodeAddr returns a loopback address, free a moment ago, whose port is
// below the system's range of ephemeral ports, for a server that a test
// stops and starts again on the same address (a cluster node, whose
// address is in its peers' --peers). A port of the ephemeral range (what
// 127.0.0.1:0 gives) can be taken while its server is down by the local
// end of any outgoing connection, among them a peer's own attempts to
// reach it, which on loopback may even connect to themselves; a port
// below that range is only ever taken by a listener.
func NodeAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	const first = 10000
	for range 1000 {
		port := first + rand.IntN(low-first)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken: another draw
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return ""
}

// ClosedAddr returns a loopback address where nothing listens, for a
// test of a server that cannot be reached: a port free a moment ago, below
// the ephemeral range so that no outgoing connection takes it. A fixed
// port (127.0.0.1:1) is not: any process on the machine may listen on it.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return NodeAddr(t)
}

// ephemeralLow returns the first port of the system's ephemeral range
// (Linux: /proc/sys/net/ipv4/ip_local_port_range; elsewhere the IANA
// range's 49152).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if low, err := strconv.Atoi(f[0]); err == nil && low > 11000 {
				return low
			}
		}
	}
	return 49152
}

package linearize

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo is a server that sends back every line it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func dialProxy(t *testing.T, p *proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends a line and reads it back within d; it reports whether
// it came back.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string, d time.Duration) bool {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	return readLine(t, c, r, line, d)
}

func readLine(t *testing.T, c net.Conn, r *bufio.Reader, want string, d time.Duration) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	got, err := r.ReadString('\n')
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return false
		}
		t.Fatal(err)
	}
	if got != want+"\n" {
		t.Fatalf("read %q, want %q", got, want)
	}
	return true
}

func TestProxy(t *testing.T) {
	p, err := newProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, r := dialProxy(t, p)
	if !roundTrip(t, c, r, "hello", 5*time.Second) {
		t.Fatal("no echo through the proxy")
	}

	// Held one way, the bytes are kept back, not lost: they arrive when
	// the hold ends, in order.
	for _, dir := range []int{forward, back} {
		p.hold(dir, true)
		if roundTrip(t, c, r, "held", 200*time.Millisecond) {
			t.Fatalf("direction %d held, yet the echo came back", dir)
		}
		p.heal()
		if !readLine(t, c, r, "held", 5*time.Second) {
			t.Fatalf("direction %d healed, and the held bytes did not arrive", dir)
		}
	}

	// Delayed, a round trip takes at least the delay each way.
	p.setDelay(100 * time.Millisecond)
	began := time.Now()
	if !roundTrip(t, c, r, "slow", 5*time.Second) {
		t.Fatal("no echo through the delay")
	}
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Fatalf("a round trip through a delay of 100ms each way took %v", took)
	}
	p.heal()

	// Reset, the connection ends; a new one works.
	p.reset()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection survived a reset")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection did not end on a reset")
	}
	c, r = dialProxy(t, p)
	if !roundTrip(t, c, r, "again", 5*time.Second) {
		t.Fatal("no echo on a new connection after a reset")
	}
}

// TestProxyHoldsNewConnections: a connection made while the proxy holds
// both ways gets nothing through until it heals, as across a partition.
func TestProxyHoldsNewConnections(t *testing.T) {
	p, err := newProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	p.hold(forward, true)
	p.hold(back, true)
	c, r := dialProxy(t, p)
	if roundTrip(t, c, r, "partitioned", 200*time.Millisecond) {
		t.Fatal("an echo came back across a partition")
	}
	p.heal()
	if !readLine(t, c, r, "partitioned", 5*time.Second) {
		t.Fatal("the bytes held across the partition did not arrive after it healed")
	}
}

// TestNetwork: isolating a node holds its links to and from every other
// node and no other; one-way holds only what it sends; heal lets it all
// through.
func TestNetwork(t *testing.T) {
	n, err := newNetwork(map[string]string{"a": echo(t), "b": echo(t), "c": echo(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	if got, want := n.peers("a", map[string]string{"a": "A", "b": "B", "c": "C"}),
		"a=A,b="+n.links["a"]["b"].addr()+",c="+n.links["a"]["c"].addr(); got != want {
		t.Fatalf("peers of a: %q, want %q", got, want)
	}
	type link struct{ from, to string }
	conns := map[link]struct {
		c net.Conn
		r *bufio.Reader
	}{}
	for _, a := range n.ids {
		for _, b := range n.others(a) {
			c, r := dialProxy(t, n.links[a][b])
			conns[link{a, b}] = struct {
				c net.Conn
				r *bufio.Reader
			}{c, r}
		}
	}
	// A link that must let through gets seconds (the machine may be
	// busy); one that must hold is watched for a moment, which can only
	// make the test pass wrongly, never fail wrongly.
	flows := func(l link, line string, want bool) bool {
		x := conns[l]
		wait := 200 * time.Millisecond
		if want {
			wait = 10 * time.Second
		}
		return roundTrip(t, x.c, x.r, line, wait)
	}
	expect := func(what string, through map[link]bool) {
		t.Helper()
		for l := range conns {
			if flows(l, what, through[l]) != through[l] {
				t.Fatalf("%s: link %s→%s lets through %v, want %v", what, l.from, l.to, !through[l], through[l])
			}
		}
	}
	all := map[link]bool{}
	for l := range conns {
		all[l] = true
	}
	expect("before", all)

	n.isolate("a")
	expect("isolated", map[link]bool{{"b", "c"}: true, {"c", "b"}: true})
	n.heal(true)
	for l := range conns {
		c, r := dialProxy(t, n.links[l.from][l.to])
		conns[l] = struct {
			c net.Conn
			r *bufio.Reader
		}{c, r}
	}
	expect("healed", all)

	// One way: what a sends is held (its requests, and its responses to
	// the requests of b and c); what b and c send reaches it.
	n.silence("a")
	expect("one-way", map[link]bool{{"b", "c"}: true, {"c", "b"}: true})
	for _, b := range []string{"b", "c"} {
		if got := n.links["a"][b].held; got != [2]bool{true, false} {
			t.Fatalf("link a→%s holds %v (forward, back), want a's requests held", b, got)
		}
		if got := n.links[b]["a"].held; got != [2]bool{false, true} {
			t.Fatalf("link %s→a holds %v (forward, back), want a's responses held", b, got)
		}
	}
}

//go:build linux

package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRESPServeAnswers talks the Redis protocol to both shapes of the
// Go floor over loopback: pipelined commands, a command split across
// writes, and the answers in order.
func TestRESPServeAnswers(t *testing.T) {
	for _, mode := range respModes {
		t.Run(mode, func(t *testing.T) {
			s, err := newRESPServer("127.0.0.1:0", mode, 5)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.run() }()
			defer func() {
				s.close()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
			}()
			c, err := net.Dial("tcp", s.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(c)
			send := func(parts ...string) {
				t.Helper()
				for _, p := range parts {
					if _, err := io.WriteString(c, p); err != nil {
						t.Fatal(err)
					}
					time.Sleep(10 * time.Millisecond) // separate reads
				}
			}
			expect := func(want string) {
				t.Helper()
				got := make([]byte, len(want))
				if _, err := io.ReadFull(r, got); err != nil {
					t.Fatalf("reading %q: %v", want, err)
				}
				if string(got) != want {
					t.Fatalf("got %q, want %q", got, want)
				}
			}
			set := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
			get := "*2\r\n$3\r\nget\r\n$1\r\nk\r\n"
			send(set + get + "*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n")
			expect("+OK\r\n$5\r\nxxxxx\r\n*0\r\n")
			send(get[:7], get[7:15], get[15:])
			expect("$5\r\nxxxxx\r\n")
			send("*1\r\n$4\r\nPING\r\n")
			expect("+PONG\r\n")
			send("+not a command\r\n")
			if _, err := r.ReadByte(); err == nil {
				t.Fatal("an answer to a malformed command, want the connection closed")
			}
		})
	}
}

// TestParseRESPCommand checks the parser on complete, partial and
// malformed input.
func TestParseRESPCommand(t *testing.T) {
	for _, tc := range []struct {
		in, name string
		n        int
		bad      bool
	}{
		{in: "*1\r\n$4\r\nPING\r\n", name: "PING", n: 14},
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1", name: "GET", n: 20},
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r"},
		{in: "*2\r\n$3\r\nGE"},
		{in: "*2"},
		{in: "", n: 0},
		{in: "$3\r\nGET\r\n", bad: true},
		{in: "*0\r\n", bad: true},
		{in: "*1\r\n$3\r\nGETX\r\n", bad: true},
		{in: "*1\r\n$-1\r\n", bad: true},
		{in: "*" + strings.Repeat("9", 40), bad: true},
	} {
		name, n, err := parseRESPCommand([]byte(tc.in))
		if (err != nil) != tc.bad || string(name) != tc.name || n != tc.n {
			t.Errorf("%q: %q, %d, %v; want %q, %d, error %v", tc.in, name, n, err, tc.name, tc.n, tc.bad)
		}
	}
}

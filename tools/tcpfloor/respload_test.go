//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyServer is a Redis-protocol server of SET and GET, over a map, that
// records the GETs of keys it does not hold.
type keyServer struct {
	ln      net.Listener
	mu      sync.Mutex
	values  map[string]string
	read    map[string]bool // the keys GET asked for
	unknown int             // GETs of keys never SET
	refuse  bool            // answer SET with an error
}

func startKeyServer(t *testing.T, refuse bool) *keyServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &keyServer{ln: ln, values: map[string]string{}, read: map[string]bool{}, refuse: refuse}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	return s
}

func (s *keyServer) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var answer string
		s.mu.Lock()
		switch {
		case args[0] == "SET" && len(args) == 3 && s.refuse:
			answer = "-ERR refused\r\n"
		case args[0] == "SET" && len(args) == 3:
			s.values[args[1]] = args[2]
			answer = "+OK\r\n"
		case args[0] == "GET" && len(args) == 2:
			v, ok := s.values[args[1]]
			s.read[args[1]] = true
			if !ok {
				s.unknown++
			}
			answer = fmt.Sprintf("$%d\r\n%s\r\n", len(v), v)
		default:
			answer = "-ERR unknown\r\n"
		}
		s.mu.Unlock()
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}

// readCommand reads an array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "*"), "\r\n"))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad array %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "$"), "\r\n"))
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bad bulk string %q", line)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestRESPLoadReadsTheKeysItStored: resp-load stores every key, then
// reads them at random, each response counted once.
func TestRESPLoadReadsTheKeysItStored(t *testing.T) {
	s := startKeyServer(t, false)
	r, err := respLoad(loadConfig{
		addr: s.ln.Addr().String(), conns: 8,
		warmup: 50 * time.Millisecond, duration: 300 * time.Millisecond,
		serverPID: os.Getpid(),
	}, 200, 33)
	if err != nil {
		t.Fatal(err)
	}
	if r.Conns != 8 || r.Requests < 100 || r.ServerCPU <= 0 {
		t.Fatalf("report %+v: want 8 connections, 100 requests at least and the server's CPU", r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.values) != 200 || s.values[keyName(199)] != strings.Repeat("x", 33) {
		t.Fatalf("%d keys stored, %q in the last; want 200 of 33 bytes", len(s.values), s.values[keyName(199)])
	}
	if s.unknown != 0 || len(s.read) < 100 {
		t.Fatalf("%d GETs of keys never stored, %d keys read; want none, and most of the 200 keys", s.unknown, len(s.read))
	}
}

// TestRESPLoadStopsWhenTheKeysAreNotStored: a server that refuses the
// SETs is reported, not measured.
func TestRESPLoadStopsWhenTheKeysAreNotStored(t *testing.T) {
	s := startKeyServer(t, true)
	_, err := respLoad(loadConfig{addr: s.ln.Addr().String(), conns: 1, duration: time.Second}, 10, 5)
	if err == nil || !strings.Contains(err.Error(), "-ERR refused") {
		t.Fatalf("error %v, want the server's answer to the SET", err)
	}
}

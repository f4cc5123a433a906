//go:build linux

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"
)

// resp-load drives a Redis-protocol server the way dss bench drives dss:
// --conns connections, one GET in flight on each, of keys picked at
// random among --keys, each holding a value of --value-size bytes; from
// the same epoll loop as load, so that the server is kept as busy as dss
// bench keeps dss. redis-benchmark, pinned to one CPU, reaches about two
// thirds of that rate on the machine of docs/benchmarks.md, and a server
// that waits for requests between them spends more CPU on each (more
// wake-ups, fewer ready connections per epoll_wait): the CPU per request
// of two servers compares fairly at the same pace only.
//
// It first stores every key (SET key:<12 digits> with the value), the
// names redis-benchmark -r gives its keys.
//
//	tcpfloor resp-load --addr 127.0.0.1:6379 --server-pid "$(pidof redis-server)"

func runRESPLoad(args []string) error {
	fs := flag.NewFlagSet("resp-load", flag.ExitOnError)
	cfg := loadConfig{}
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "address of a Redis-protocol server")
	fs.IntVar(&cfg.conns, "conns", 64, "connections, one GET in flight on each")
	keys := fs.Int("keys", 10000, "keys, each stored first and then read at random")
	size := fs.Int("value-size", 100, "bytes of each value")
	fs.DurationVar(&cfg.warmup, "warmup", 3*time.Second, "load before the measured window")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured window")
	fs.IntVar(&cfg.serverPID, "server-pid", 0, "process of the server, to report its CPU per request")
	_ = fs.Parse(args)
	r, err := respLoad(cfg, *keys, *size)
	if err != nil {
		return err
	}
	return printJSON(r)
}

// respLoad stores keys values of size bytes on the server at cfg.addr and
// reads them at random with load.
func respLoad(cfg loadConfig, keys, size int) (loadReport, error) {
	if keys < 1 || size < 0 {
		return loadReport{}, errors.New("a key at least, and a size of 0 or more, are needed")
	}
	if err := storeKeys(cfg.addr, keys, size); err != nil {
		return loadReport{}, err
	}
	gets := make([][]byte, keys)
	for i := range gets {
		gets[i] = respCommand("GET", keyName(i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cfg.next = func() []byte { return gets[rng.IntN(keys)] }
	cfg.responseSize = len(fmt.Sprintf("$%d\r\n", size)) + size + 2
	return load(cfg)
}

// keyName is the name redis-benchmark -r gives key i.
func keyName(i int) string { return fmt.Sprintf("key:%012d", i) }

// respCommand encodes a command as the array of bulk strings a client
// sends.
func respCommand(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// storeKeys SETs every key on one connection, a thousand commands to a
// write, and checks that each was answered +OK.
func storeKeys(addr string, keys, size int) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	value := string(bytes.Repeat([]byte{'x'}, size))
	ok := []byte("+OK\r\n")
	for first := 0; first < keys; first += 1000 {
		n := min(1000, keys-first)
		var batch []byte
		for i := first; i < first+n; i++ {
			batch = append(batch, respCommand("SET", keyName(i), value)...)
		}
		if _, err := conn.Write(batch); err != nil {
			return err
		}
		want := bytes.Repeat(ok, n)
		got := make([]byte, len(want))
		if _, err := io.ReadFull(conn, got); err != nil {
			return fmt.Errorf("storing the keys: %w", err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("storing the keys: the server answered %q", firstLine(got))
		}
	}
	return nil
}

// firstLine returns the first answer of b that is not +OK, for an error.
func firstLine(b []byte) []byte {
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte("\r\n"))
		if string(line) != "+OK" {
			return line
		}
		b = rest
	}
	return nil
}

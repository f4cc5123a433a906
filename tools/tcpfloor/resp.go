//go:build linux

package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/dssio/dss/internal/mqtt/readloop"
	"github.com/dssio/dss/internal/rawio"
)

// The Go floor: a Redis-protocol server that does nothing but answer, so
// that redis-benchmark measures Redis and what any Go server costs on
// this machine in the same run (scripts/bench.sh, scenario go_floor). GET
// is answered with a value of --value-size bytes, CONFIG with an empty
// array (redis-benchmark asks for two settings at its start), PING with
// PONG, anything else with OK; the answers to the commands of one read go
// out in one write, as Redis does. Three shapes:
//
//	goroutine  a goroutine per connection reading its net.Conn (the
//	           runtime's netpoller; Go's usual server)
//	rawio      the same, the net.Conn's reads and writes made with
//	           internal/rawio, as dss makes them
//	readloop   the connections read by one internal/mqtt/readloop.Loop
//	           with internal/rawio, the shape dss reads its MQTT
//	           connections in
//
//	tcpfloor resp-serve --addr 127.0.0.1:18902 --mode goroutine
//	redis-benchmark -p 18902 -c 1 -t get -d 100 -n 100000

// respModes are the shapes resp-serve serves connections in.
var respModes = []string{"goroutine", "rawio", "readloop"}

func runRESPServe(args []string) error {
	fs := flag.NewFlagSet("resp-serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18902", "address to listen on")
	mode := fs.String("mode", "goroutine", "how connections are read: goroutine, rawio or readloop")
	size := fs.Int("value-size", 100, "bytes of the value a GET is answered with")
	_ = fs.Parse(args)
	s, err := newRESPServer(*addr, *mode, *size)
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-stop
		s.close()
	}()
	return s.run()
}

// respServer answers the Redis protocol's commands of its connections.
type respServer struct {
	ln    net.Listener
	mode  string
	value []byte // a GET's answer: the bulk string of the value
	loop  *readloop.Loop[*respConn]

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newRESPServer(addr, mode string, valueSize int) (*respServer, error) {
	if !slices.Contains(respModes, mode) {
		return nil, fmt.Errorf("mode %q: want one of %v", mode, respModes)
	}
	if valueSize < 0 {
		return nil, errors.New("--value-size must not be negative")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	value := fmt.Appendf(nil, "$%d\r\n", valueSize)
	value = append(value, bytes.Repeat([]byte{'x'}, valueSize)...)
	value = append(value, "\r\n"...)
	s := &respServer{ln: ln, mode: mode, value: value, conns: map[net.Conn]bool{}}
	if mode == "readloop" {
		if s.loop, err = readloop.New[*respConn](&respHandler{s: s, buf: make([]byte, 16<<10)}); err != nil {
			_ = ln.Close()
			return nil, err
		}
	}
	return s, nil
}

// close stops run and closes every connection.
func (s *respServer) close() {
	_ = s.ln.Close()
	if s.loop != nil {
		s.loop.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// run accepts connections until close.
func (s *respServer) run() error {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		switch s.mode {
		case "goroutine":
			go s.serveGoroutine(c, c)
			continue
		case "rawio":
			go s.serveGoroutine(c, rawio.Wrap(c))
			continue
		}
		if err := s.addToLoop(c); err != nil {
			s.drop(c)
		}
	}
}

func (s *respServer) drop(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// serveGoroutine reads c, through rw, on a goroutine of its own until it
// ends.
func (s *respServer) serveGoroutine(c, rw net.Conn) {
	defer s.drop(c)
	rc := &respConn{c: c}
	buf := make([]byte, 16<<10)
	for {
		n, err := rw.Read(buf)
		if n > 0 {
			if werr := rc.answer(buf[:n], s.value, rw); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A respConn is a connection and the start of a command that its last
// read ended in the middle of.
type respConn struct {
	c       net.Conn
	raw     syscall.RawConn // in the loop
	fd      int
	m       readloop.Member
	partial []byte
	out     []byte
}

// answer parses the commands in data (after what partial kept) and
// writes their answers to w in one write.
func (rc *respConn) answer(data, value []byte, w io.Writer) error {
	if len(rc.partial) > 0 {
		rc.partial = append(rc.partial, data...)
		data = rc.partial
	}
	out := rc.out[:0]
	for len(data) > 0 {
		name, n, err := parseRESPCommand(data)
		if err != nil {
			return err
		}
		if n == 0 {
			break // the rest comes with the next read
		}
		data = data[n:]
		switch {
		case bytes.EqualFold(name, []byte("GET")):
			out = append(out, value...)
		case bytes.EqualFold(name, []byte("CONFIG")):
			out = append(out, "*0\r\n"...)
		case bytes.EqualFold(name, []byte("PING")):
			out = append(out, "+PONG\r\n"...)
		default:
			out = append(out, "+OK\r\n"...)
		}
	}
	rc.partial = append(rc.partial[:0], data...)
	rc.out = out
	if len(out) == 0 {
		return nil
	}
	_, err := w.Write(out)
	return err
}

// parseRESPCommand reads one command, an array of bulk strings, from the
// start of b: its first element and the bytes it took, or 0 bytes when b
// holds only part of it.
func parseRESPCommand(b []byte) (name []byte, n int, err error) {
	count, i, err := respLength(b, 0, '*')
	if err != nil || i == 0 {
		return nil, 0, err
	}
	if count < 1 {
		return nil, 0, fmt.Errorf("an array of %d elements: want a command", count)
	}
	for k := 0; k < count; k++ {
		size, j, err := respLength(b, i, '$')
		if err != nil || j == 0 {
			return nil, 0, err
		}
		if len(b) < j+size+2 {
			return nil, 0, nil
		}
		if b[j+size] != '\r' || b[j+size+1] != '\n' {
			return nil, 0, errors.New("a bulk string not ended by CRLF")
		}
		if k == 0 {
			name = b[j : j+size]
		}
		i = j + size + 2
	}
	return name, i, nil
}

// respLength reads the line "<kind><number>\r\n" at b[at:]: the number
// and the index after the line, or index 0 when the line is not complete.
func respLength(b []byte, at int, kind byte) (int, int, error) {
	end := bytes.Index(b[at:], []byte("\r\n"))
	if end < 0 {
		if len(b)-at > 32 {
			return 0, 0, errors.New("a length line longer than 32 bytes")
		}
		return 0, 0, nil
	}
	line := b[at : at+end]
	if len(line) < 2 || line[0] != kind {
		return 0, 0, fmt.Errorf("%q: want %c and a length", line, kind)
	}
	v, err := strconv.Atoi(string(line[1:]))
	if err != nil || v < 0 || v > 512<<20 {
		return 0, 0, fmt.Errorf("%q: not a length", line)
	}
	return v, at + end + 2, nil
}

// addToLoop has the loop read c.
func (s *respServer) addToLoop(c net.Conn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("not a syscall.Conn")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	rc := &respConn{c: c, raw: raw}
	if err := raw.Control(func(fd uintptr) { rc.fd = int(fd) }); err != nil {
		return err
	}
	return s.loop.Add(&rc.m, raw, rc)
}

// respHandler gives the loop's connections their turns, which read
// into buf: they run on the loop's goroutine, one at a time.
type respHandler struct {
	s   *respServer
	buf []byte
}

func (h *respHandler) Turn(rc *respConn, _ int64) error {
	n, err := rawio.Read(rc.fd, h.buf)
	switch {
	case err == syscall.EAGAIN:
		return nil
	case err != nil:
		return err
	case n == 0:
		return io.EOF
	}
	return rc.answer(h.buf[:n], h.s.value, rawWriter{rc.raw})
}

func (h *respHandler) Left(rc *respConn, _ error) {
	// Closing waits for no turn: Left runs with the loop's lock held.
	go h.s.drop(rc.c)
}

func (*respHandler) RoundDone() {}

// rawWriter writes to a connection's descriptor, waiting in the
// runtime's poller while the socket's buffer is full (answers this small
// rarely wait).
type rawWriter struct{ raw syscall.RawConn }

func (w rawWriter) Write(b []byte) (int, error) {
	written := 0
	var werr error
	err := w.raw.Write(func(fd uintptr) bool {
		for written < len(b) {
			n, err := rawio.Write(int(fd), b[written:])
			if err == syscall.EAGAIN {
				return false
			}
			if err != nil {
				werr = err
				return true
			}
			written += n
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return written, err
}

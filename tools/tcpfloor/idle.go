//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dssio/dss/internal/procstat"
)

// The idle floor: what holding an idle TCP connection costs a Go server
// on this machine, with no protocol around it, in three shapes, so that
// the memory dss and Mosquitto grow by for idle connections can be read
// against it (scripts/bench.sh, scenario idle_10k):
//
//	goroutine  a net.Conn and a goroutine blocked in a 1-byte Read on it
//	           (the runtime's netpoller; Go's usual server)
//	netconn    a net.Conn and no goroutine: its descriptor waits in an
//	           epoll instance of the server's, one goroutine for all
//	epoll      a bare descriptor in an epoll instance, no net.Conn
//
//	tcpfloor idle-serve --addr 127.0.0.1:18901 --mode goroutine
//	tcpfloor idle-load --addr 127.0.0.1:18901 --conns 10000 --server-pid PID

// idleModes are the shapes idle-serve holds connections in.
var idleModes = []string{"goroutine", "netconn", "epoll"}

func runIdleServe(args []string) error {
	fs := flag.NewFlagSet("idle-serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18901", "address to listen on")
	mode := fs.String("mode", "goroutine", "how a connection is held: goroutine, netconn or epoll")
	_ = fs.Parse(args)
	s, err := newIdleServer(*addr, *mode)
	if err != nil {
		return err
	}
	return s.run()
}

// idleServer accepts connections and holds them, reading and dropping
// whatever they send, until they close.
type idleServer struct {
	mode string
	ln   net.Listener // goroutine, netconn
	lfd  int          // epoll: the listening socket
	epfd int          // netconn, epoll

	accepted atomic.Int64 // connections accepted so far

	mu    sync.Mutex
	conns map[int]net.Conn // netconn: by descriptor, so that they stay open
	fds   map[int]bool     // epoll
}

func newIdleServer(addr, mode string) (*idleServer, error) {
	s := &idleServer{mode: mode, lfd: -1, epfd: -1, conns: map[int]net.Conn{}, fds: map[int]bool{}}
	switch mode {
	case "goroutine", "netconn":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		s.ln = ln
	case "epoll":
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, err
		}
		if s.lfd, err = listen(ap); err != nil {
			return nil, err
		}
		// accept blocks (a thread, not a goroutine per connection);
		// close's shutdown wakes it.
		if err := syscall.SetNonblock(s.lfd, false); err != nil {
			s.close()
			return nil, os.NewSyscallError("setnonblock", err)
		}
	default:
		return nil, fmt.Errorf("--mode %q: want one of %v", mode, idleModes)
	}
	if mode != "goroutine" {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			s.close()
			return nil, os.NewSyscallError("epoll_create1", err)
		}
		s.epfd = epfd
	}
	return s, nil
}

// close stops accepting and reading; the connections held go with the
// process (or the test).
func (s *idleServer) close() {
	if s.ln != nil {
		_ = s.ln.Close()
	}
	if s.lfd >= 0 {
		_ = syscall.Shutdown(s.lfd, syscall.SHUT_RDWR) // wakes the accept
	}
	if s.epfd >= 0 {
		_ = syscall.Close(s.epfd)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for fd, c := range s.conns {
		_ = c.Close()
		delete(s.conns, fd)
	}
	for fd := range s.fds {
		_ = syscall.Close(fd)
		delete(s.fds, fd)
	}
}

// run accepts until the listener is closed.
func (s *idleServer) run() error {
	if s.epfd >= 0 {
		go s.drain()
	}
	if s.mode == "epoll" {
		return s.acceptFDs()
	}
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.accepted.Add(1)
		if s.mode == "goroutine" {
			go holdConn(c)
			continue
		}
		if err := s.watchConn(c); err != nil {
			_ = c.Close()
			return err
		}
	}
}

// holdConn is a goroutine blocked in a read of one byte until c closes.
func holdConn(c net.Conn) {
	defer c.Close()
	var b [1]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			return
		}
	}
}

// watchConn adds c's descriptor to the server's epoll instance and keeps
// c (a net.Conn whose descriptor the runtime's poller also knows).
func (s *idleServer) watchConn(c net.Conn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("a connection without a descriptor")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := raw.Control(func(fd uintptr) {
		s.mu.Lock()
		s.conns[int(fd)] = c
		s.mu.Unlock()
		werr = watch(s.epfd, int(fd), syscall.EPOLLIN|syscall.EPOLLRDHUP)
	}); err != nil {
		return err
	}
	return werr
}

// acceptFDs accepts bare descriptors into the epoll instance until the
// listening socket is shut down.
func (s *idleServer) acceptFDs() error {
	for {
		fd, _, err := syscall.Accept4(s.lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		switch {
		case err == syscall.EINTR || err == syscall.ECONNABORTED:
			continue
		case err == syscall.EINVAL || err == syscall.EBADF:
			return nil // shut down
		case err != nil:
			return os.NewSyscallError("accept4", err)
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.fds[fd] = true
		s.mu.Unlock()
		if err := watch(s.epfd, fd, syscall.EPOLLIN|syscall.EPOLLRDHUP); err != nil {
			return err
		}
	}
}

// drain reads and drops what the watched connections send, and closes
// those that end, on one goroutine (a blocking epoll_wait: it holds a
// thread while nothing is ready, as a C server's loop does).
func (s *idleServer) drain() {
	events := make([]syscall.EpollEvent, 128)
	buf := make([]byte, 4096)
	for {
		n, err := syscall.EpollWait(s.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // closed
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			m, err := syscall.Read(fd, buf)
			if err == syscall.EAGAIN || m > 0 {
				continue
			}
			_ = syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
			s.mu.Lock()
			if c, ok := s.conns[fd]; ok {
				delete(s.conns, fd)
				_ = c.Close()
			} else if s.fds[fd] {
				delete(s.fds, fd)
				_ = syscall.Close(fd)
			}
			s.mu.Unlock()
		}
	}
}

func runIdleLoad(args []string) error {
	fs := flag.NewFlagSet("idle-load", flag.ExitOnError)
	cfg := idleLoadConfig{}
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:18901", "address of a tcpfloor idle server")
	fs.IntVar(&cfg.conns, "conns", 10000, "connections to open and hold")
	fs.IntVar(&cfg.hello, "hello", 64, "bytes each connection sends once connected (a CONNECT's size)")
	fs.DurationVar(&cfg.hold, "hold", 5*time.Second, "how long the connections are held before the server's memory is read")
	fs.IntVar(&cfg.serverPID, "server-pid", 0, "process of the server, to report its resident memory")
	_ = fs.Parse(args)
	r, err := idleLoad(cfg)
	if err != nil {
		return err
	}
	return printJSON(r)
}

type idleLoadConfig struct {
	addr      string
	conns     int
	hello     int
	hold      time.Duration
	serverPID int
}

// idleReport is what idle-load prints, in JSON, with the field names of
// dss bench's report of --op idle.
type idleReport struct {
	Connections int   `json:"connections"`
	RSSStart    int64 `json:"server_rss_start_bytes"`
	RSSEnd      int64 `json:"server_rss_end_bytes"`
}

// idleLoad opens cfg.conns connections, sends cfg.hello bytes on each,
// holds them for cfg.hold and reports the server's resident memory
// before the first and after the hold.
func idleLoad(cfg idleLoadConfig) (idleReport, error) {
	ap, err := netip.ParseAddrPort(cfg.addr)
	if err != nil {
		return idleReport{}, err
	}
	if !ap.Addr().Is4() || cfg.conns < 1 || cfg.serverPID == 0 {
		return idleReport{}, errors.New("an IPv4 address, one connection and --server-pid are needed")
	}
	r0, err := procstat.Read(cfg.serverPID)
	if err != nil {
		return idleReport{}, err
	}
	fds := make([]int, 0, cfg.conns)
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	sa := &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	hello := make([]byte, cfg.hello)
	for range cfg.conns {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return idleReport{}, os.NewSyscallError("socket", err)
		}
		fds = append(fds, fd)
		if err := syscall.Connect(fd, sa); err != nil {
			return idleReport{}, os.NewSyscallError("connect", err)
		}
		if len(hello) > 0 {
			if _, err := syscall.Write(fd, hello); err != nil {
				return idleReport{}, os.NewSyscallError("write", err)
			}
		}
	}
	time.Sleep(cfg.hold)
	r1, err := procstat.Read(cfg.serverPID)
	if err != nil {
		return idleReport{}, err
	}
	return idleReport{Connections: len(fds), RSSStart: r0.ServerRSS, RSSEnd: r1.ServerRSS}, nil
}

//go:build linux

// Command tcpfloor measures what the kernel costs a request/response
// server on this machine, with no protocol and no server around it: a
// server of one thread, one epoll instance, and per request one read, a
// fixed amount of busy work and one write; and a load generator built the
// same way that keeps one request in flight on each of its connections.
// scripts/bench.sh runs it at 64 and 4,096 connections next to dss, so
// that the share of the peak dss keeps at 4,096 connections can be read
// against the share the machine's TCP stack leaves any server that does
// as much work per request (docs/benchmarks.md).
//
//	tcpfloor serve --addr 127.0.0.1:18900 --work 3us
//	tcpfloor load --addr 127.0.0.1:18900 --conns 4096 --server-pid PID
//
// idle-serve and idle-load measure what an idle connection costs a Go
// server (idle.go); resp-serve is a Redis-protocol server doing nothing
// but answer, what any Go server costs a request (resp.go).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/dssio/dss/internal/procstat"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(os.Args[2:])
	case "load":
		err = runLoad(os.Args[2:])
	case "idle-serve":
		err = runIdleServe(os.Args[2:])
	case "idle-load":
		err = runIdleLoad(os.Args[2:])
	case "resp-serve":
		err = runRESPServe(os.Args[2:])
	case "resp-load":
		err = runRESPLoad(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpfloor:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tcpfloor serve|load|idle-serve|idle-load|resp-serve|resp-load [flags] (tcpfloor serve -h, ...)")
	os.Exit(2)
}

func runServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18900", "address to listen on")
	work := fs.Duration("work", 3*time.Microsecond, "busy work per request")
	size := fs.Int("response-size", 150, "bytes of each response")
	_ = fs.Parse(args)
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil {
		return err
	}
	lfd, err := listen(ap)
	if err != nil {
		return err
	}
	s, err := newServer(lfd, *work, *size)
	if err != nil {
		return err
	}
	return s.run()
}

func runLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	cfg := loadConfig{}
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:18900", "address of a tcpfloor server")
	fs.IntVar(&cfg.conns, "conns", 64, "connections, one request in flight on each")
	fs.IntVar(&cfg.requestSize, "request-size", 250, "bytes of each request")
	fs.IntVar(&cfg.responseSize, "response-size", 150, "bytes of each response (as the server's)")
	fs.DurationVar(&cfg.warmup, "warmup", 3*time.Second, "load before the measured window")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured window")
	fs.IntVar(&cfg.serverPID, "server-pid", 0, "process of the server, to report its CPU per request")
	_ = fs.Parse(args)
	r, err := load(cfg)
	if err != nil {
		return err
	}
	return printJSON(r)
}

// listen opens a non-blocking listening socket on ap.
func listen(ap netip.AddrPort) (int, error) {
	if !ap.Addr().Is4() {
		return -1, errors.New("an IPv4 address is needed")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("bind", err)
	}
	if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("listen", err)
	}
	return fd, nil
}

// server answers every read of a connection with one response, after its
// busy work, on one locked thread.
type server struct {
	lfd, epfd int
	stopR     int // the read end of a pipe that stop writes to
	stopW     int
	work      time.Duration
	response  []byte
}

func newServer(lfd int, work time.Duration, responseSize int) (*server, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("pipe2", err)
	}
	s := &server{lfd: lfd, epfd: epfd, stopR: p[0], stopW: p[1], work: work, response: make([]byte, responseSize)}
	for _, fd := range []int{lfd, s.stopR} {
		if err := watch(epfd, fd, syscall.EPOLLIN); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// stop ends run, from another goroutine.
func (s *server) stop() { _, _ = syscall.Write(s.stopW, []byte{0}) }

func (s *server) close() {
	for _, fd := range []int{s.epfd, s.stopR, s.stopW, s.lfd} {
		syscall.Close(fd)
	}
}

// run serves until stop; it closes every descriptor it has.
func (s *server) run() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer s.close()
	conns := map[int]bool{}
	defer func() {
		for fd := range conns {
			syscall.Close(fd)
		}
	}()
	events := make([]syscall.EpollEvent, 128)
	buf := make([]byte, 4096)
	for {
		n, err := syscall.EpollWait(s.epfd, events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("epoll_wait", err)
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			switch fd {
			case s.stopR:
				return nil
			case s.lfd:
				if err := s.accept(conns); err != nil {
					return err
				}
				continue
			}
			m, err := syscall.Read(fd, buf)
			if err == syscall.EAGAIN {
				continue
			}
			if m <= 0 || err != nil {
				_ = syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
				syscall.Close(fd)
				delete(conns, fd)
				continue
			}
			spin(s.work)
			_, _ = syscall.Write(fd, s.response)
		}
	}
}

// accept takes every pending connection.
func (s *server) accept(conns map[int]bool) error {
	for {
		fd, _, err := syscall.Accept4(s.lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err == syscall.EAGAIN || err == syscall.ECONNABORTED || err == syscall.EINTR {
			return nil
		}
		if err != nil {
			return os.NewSyscallError("accept4", err)
		}
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if err := watch(s.epfd, fd, syscall.EPOLLIN|syscall.EPOLLRDHUP); err != nil {
			syscall.Close(fd)
			return err
		}
		conns[fd] = true
	}
}

// watch adds fd to the epoll instance epfd, for events.
func watch(epfd, fd int, events uint32) error {
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
	return os.NewSyscallError("epoll_ctl", syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev))
}

// spin keeps the CPU busy for d, the server's own work on a request.
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < d; {
	}
}

type loadConfig struct {
	addr                      string
	conns                     int
	requestSize, responseSize int
	warmup, duration          time.Duration
	serverPID                 int
	// next, when set, returns each request to send (of any size; its
	// response is responseSize bytes); otherwise every request is
	// requestSize zero bytes.
	next func() []byte
}

// loadReport is what load prints, in JSON.
type loadReport struct {
	Conns             int     `json:"conns"`
	Seconds           float64 `json:"seconds"`
	Requests          int64   `json:"requests"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	ServerCPU         float64 `json:"server_cpu_us_per_request,omitempty"`
	ClientCPU         float64 `json:"client_cpu_us_per_request"`
}

// load keeps one request in flight on each of cfg.conns connections and
// measures the responses over cfg.duration, after cfg.warmup.
func load(cfg loadConfig) (loadReport, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ap, err := netip.ParseAddrPort(cfg.addr)
	if err != nil {
		return loadReport{}, err
	}
	if !ap.Addr().Is4() || cfg.conns < 1 || cfg.requestSize < 1 && cfg.next == nil || cfg.responseSize < 1 {
		return loadReport{}, errors.New("an IPv4 address, one connection and sizes of a byte at least are needed")
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return loadReport{}, os.NewSyscallError("epoll_create1", err)
	}
	defer syscall.Close(epfd)
	received := map[int]int{} // bytes of the response under way, by descriptor
	defer func() {
		for fd := range received {
			syscall.Close(fd)
		}
	}()
	sa := &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	for range cfg.conns {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return loadReport{}, os.NewSyscallError("socket", err)
		}
		received[fd] = 0
		if err := syscall.Connect(fd, sa); err != nil {
			return loadReport{}, os.NewSyscallError("connect", err)
		}
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		if err := syscall.SetNonblock(fd, true); err != nil {
			return loadReport{}, os.NewSyscallError("setnonblock", err)
		}
		if err := watch(epfd, fd, syscall.EPOLLIN|syscall.EPOLLRDHUP); err != nil {
			return loadReport{}, err
		}
	}
	fixed := make([]byte, cfg.requestSize)
	request := func() []byte { return fixed }
	if cfg.next != nil {
		request = cfg.next
	}
	for fd := range received {
		if _, err := syscall.Write(fd, request()); err != nil {
			return loadReport{}, os.NewSyscallError("write", err)
		}
	}

	events := make([]syscall.EpollEvent, 128)
	buf := make([]byte, 4096)
	var done int64
	var start, end procstat.Reading
	measuring := false
	windowAt := time.Now().Add(cfg.warmup)
	for {
		now := time.Now()
		if !measuring && !now.Before(windowAt) {
			if start, err = procstat.Read(cfg.serverPID); err != nil {
				return loadReport{}, err
			}
			measuring, done = true, 0
		}
		if measuring && now.Sub(start.At) >= cfg.duration {
			if end, err = procstat.Read(cfg.serverPID); err != nil {
				return loadReport{}, err
			}
			break
		}
		n, err := syscall.EpollWait(epfd, events, 100)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return loadReport{}, os.NewSyscallError("epoll_wait", err)
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			m, err := syscall.Read(fd, buf)
			if err == syscall.EAGAIN {
				continue
			}
			if err != nil {
				return loadReport{}, os.NewSyscallError("read", err)
			}
			if m == 0 {
				return loadReport{}, errors.New("the server closed a connection")
			}
			got := received[fd] + m
			for ; got >= cfg.responseSize; got -= cfg.responseSize {
				done++
				if _, err := syscall.Write(fd, request()); err != nil {
					return loadReport{}, os.NewSyscallError("write", err)
				}
			}
			received[fd] = got
		}
	}
	secs := end.At.Sub(start.At).Seconds()
	r := loadReport{Conns: cfg.conns, Seconds: secs, Requests: done, RequestsPerSecond: float64(done) / secs}
	if done > 0 {
		r.ClientCPU = (end.Self - start.Self).Seconds() * 1e6 / float64(done)
		if end.ServerOK {
			r.ServerCPU = (end.Server - start.Server).Seconds() * 1e6 / float64(done)
		}
	}
	return r, nil
}

// printJSON writes v to standard output as indented JSON, the form the
// bench scripts read.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

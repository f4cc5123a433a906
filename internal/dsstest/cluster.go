package dsstest

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/server"
)

// StartCluster starts n servers that form a cluster in this process, each
// with cfg beside its id, data directory and cluster listener, and waits
// until every node serves writes and reads without waiting.
func StartCluster(t testing.TB, n int, cfg server.Config) []*server.Server {
	t.Helper()
	var peers []cluster.Peer
	for i := 0; i < n; i++ {
		peers = append(peers, cluster.Peer{ID: fmt.Sprint("n", i+1), Addr: NodeAddr(t)})
	}
	var servers []*server.Server
	for i := range peers {
		c := cfg
		c.NodeID, c.DataDir = peers[i].ID, t.TempDir()
		c.Cluster.Listen, c.Cluster.Peers = peers[i].Addr, peers
		servers = append(servers, StartServer(t, c))
	}
	Eventually(t, "every node ready", func() bool {
		for _, s := range servers {
			if s.Ready() != nil {
				return false
			}
		}
		return true
	})
	return servers
}

// Balancer hands the connections made to it to its targets in turn, as a
// load balancer in front of the nodes of a cluster does: two clients that
// connect one after the other are on different nodes.
type Balancer struct {
	ln      net.Listener
	targets []string
	next    atomic.Uint64

	mu    sync.Mutex
	conns map[net.Conn]struct{} // guarded by mu
	wg    sync.WaitGroup
}

// NewBalancer starts a balancer on a random loopback port; it stops when
// the test ends.
func NewBalancer(t testing.TB, targets []string) *Balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &Balancer{ln: ln, targets: targets, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

// Addr is the address clients connect to.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

func (b *Balancer) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		target := b.targets[(b.next.Add(1)-1)%uint64(len(b.targets))]
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		b.conns[c], b.conns[s] = struct{}{}, struct{}{}
		b.mu.Unlock()
		b.wg.Add(2)
		go b.pipe(c, s)
		go b.pipe(s, c)
	}
}

func (b *Balancer) pipe(src, dst net.Conn) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	// Half-close, so that a DISCONNECT written before the close is read.
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		dst.Close()
	}
	src.Close()
	b.mu.Lock()
	delete(b.conns, src)
	b.mu.Unlock()
}

func (b *Balancer) close() {
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

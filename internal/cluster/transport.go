package cluster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/rawio"
)

// MinSecretLen is the shortest cluster secret accepted, in bytes: the
// secret must resist guessing offline.
const MinSecretLen = 16

// Connection kinds: the first byte a dialer sends after the handshake.
const (
	connRaft    byte = 'R' // Raft's own RPCs (hashicorp/raft's transport)
	connRPC     byte = 'C' // read index, membership, status
	connForward byte = 'F' // a stream of forwarded writes (forward.go)
	connRelay   byte = 'M' // a stream of MQTT messages from another node (relay.go)
)

// ErrNoSecret is returned for a cluster listener that other machines can
// reach when no cluster secret is configured.
var ErrNoSecret = errors.New("cluster: a cluster secret is required when the cluster listener is not on a loopback address: set DSS_CLUSTER_SECRET or --cluster-secret-file (at least 16 bytes, e.g. `openssl rand -hex 32`)")

// tlsFromSecret returns the TLS configuration of every node that knows
// secret: each node presents a certificate for a key derived from the
// secret and accepts only a peer that presents a certificate for the same
// key. So the cluster connections are encrypted and only holders of the
// secret can join, replicate, forward or change the membership.
func tlsFromSecret(secret []byte) (*tls.Config, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("cluster: the cluster secret has %d bytes; it needs at least %d", len(secret), MinSecretLen)
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, "dss cluster key v1", ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "dss cluster"},
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("cluster: the peer presented no certificate")
		}
		cert, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return err
		}
		if k, ok := cert.PublicKey.(ed25519.PublicKey); !ok || !bytes.Equal(k, pub) {
			return errors.New("cluster: the peer does not hold the cluster secret")
		}
		return nil
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   tls.RequireAnyClientCert,
		// The chain is checked by VerifyPeerCertificate: the peer's key
		// must be the one the secret gives.
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: verify,
		MinVersion:            tls.VersionTLS13,
	}, nil
}

// isLoopback reports whether the listener address addr can only be
// reached from this machine.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// mux is the cluster listener: it authenticates every connection and hands
// it to Raft's transport or to the RPC server, by its first byte.
type mux struct {
	ln   net.Listener
	tls  *tls.Config // nil: plain TCP (loopback without a secret)
	log  *slog.Logger
	raft chan net.Conn
	rpc  func(net.Conn)
	// forward serves a stream of forwarded writes; set before serve.
	forward func(net.Conn)
	// relay serves a stream of messages from another node; set before
	// serve.
	relay func(net.Conn)
	close chan struct{}

	mu     sync.Mutex
	closed bool                  // guarded by mu
	conns  map[net.Conn]struct{} // guarded by mu; RPC and Raft connections being served
	wg     sync.WaitGroup
}

func newMux(ln net.Listener, cfg *tls.Config, log *slog.Logger, rpc func(net.Conn)) *mux {
	return &mux{ln: ln, tls: cfg, log: log, rpc: rpc, raft: make(chan net.Conn), close: make(chan struct{}), conns: make(map[net.Conn]struct{})}
}

// serve accepts connections until Close.
func (m *mux) serve() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.close:
				return
			default:
			}
			m.log.Warn("cluster listener", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		m.wg.Add(1)
		go m.route(rawio.Wrap(c))
	}
}

func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if m.tls != nil {
		tc := tls.Server(c, m.tls)
		if err := tc.Handshake(); err != nil {
			m.log.Warn("cluster connection refused", "remote", c.RemoteAddr(), "err", err)
			c.Close()
			return
		}
		c = tc
	}
	var kind [1]byte
	if _, err := c.Read(kind[:]); err != nil {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	switch kind[0] {
	case connRaft:
		// Raft's transport closes the connection when its peer does; the
		// mux closes it too when it closes first.
		tc := &trackedConn{Conn: c, m: m}
		if !m.track(tc) {
			return
		}
		select {
		case m.raft <- tc:
		case <-m.close:
			tc.Close()
		}
	case connRPC:
		m.serveTracked(c, m.rpc)
	case connForward:
		m.serveTracked(c, m.forward)
	case connRelay:
		m.serveTracked(c, m.relay)
	default:
		c.Close()
	}
}

// serveTracked runs serve on c until the connection ends, with c among
// the connections Close closes.
func (m *mux) serveTracked(c net.Conn, serve func(net.Conn)) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return
	}
	m.conns[c] = struct{}{}
	m.mu.Unlock()
	serve(c)
	c.Close()
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
}

// track adds c to the connections Close closes; false (and c closed) if
// the mux is closed already.
func (m *mux) track(c *trackedConn) bool {
	m.mu.Lock()
	closed := m.closed
	if !closed {
		m.conns[c] = struct{}{}
	}
	m.mu.Unlock()
	if closed {
		c.Conn.Close()
	}
	return !closed
}

// trackedConn is a connection that leaves the mux's set when closed.
type trackedConn struct {
	net.Conn
	m    *mux
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.m.mu.Lock()
		delete(c.m.conns, c)
		c.m.mu.Unlock()
	})
	return c.Conn.Close()
}

// dial opens an authenticated connection of the given kind to addr.
func (m *mux) dial(addr string, kind byte, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c = rawio.Wrap(c)
	if m.tls != nil {
		_ = c.SetDeadline(time.Now().Add(timeout))
		tc := tls.Client(c, m.tls)
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, err
		}
		_ = c.SetDeadline(time.Time{})
		c = tc
	}
	if _, err := c.Write([]byte{kind}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close stops accepting and waits for the connections being routed.
func (m *mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.close)
	err := m.ln.Close()
	conns := make([]net.Conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		c.Close() // a trackedConn takes m.mu
	}
	m.wg.Wait()
	return err
}

// raftLayer is the StreamLayer Raft's transport runs over: the Raft
// connections of the mux.
type raftLayer struct{ m *mux }

var _ raft.StreamLayer = raftLayer{}

func (l raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raft:
		return c, nil
	case <-l.m.close:
		return nil, net.ErrClosed
	}
}

func (l raftLayer) Close() error   { return nil } // the mux is closed by the node
func (l raftLayer) Addr() net.Addr { return l.m.ln.Addr() }

func (l raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.m.dial(string(addr), connRaft, timeout)
}

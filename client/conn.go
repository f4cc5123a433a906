package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/wire"
)

// conn is one MQTT connection to one server, ready for requests: the
// client's response and notification topics are subscribed.
type conn struct {
	pc   *paho.Client
	addr string
	// ctx ends when the connection does; requests sent on it watch it so
	// that they learn of the loss at once instead of at their deadline.
	ctx    context.Context
	cancel context.CancelFunc
	// maxPacket is the server's Maximum Packet Size from its CONNACK;
	// 0: none announced.
	maxPacket uint32
}

// A connection that ends sooner than this after it was made counts as a
// failed attempt, so that a server that accepts and drops at once is not
// hammered.
const minHealthyConn = time.Second

// start starts the supervisor goroutine.
func (c *Client) start() {
	c.goroutine(c.supervise)
}

// supervise keeps the client connected until Close: it connects to the
// servers in turn, serves each connection until it ends, then fails over
// to the next server. After a whole round of failed attempts it backs off.
func (c *Client) supervise() {
	servers := c.cfg.Servers
	next, round := 0, 0
	everUp := false
	for c.ctx.Err() == nil {
		connected := false
		for i := 0; i < len(servers) && c.ctx.Err() == nil; i++ {
			idx := (next + i) % len(servers)
			cn, err := c.connect(servers[idx])
			if err != nil {
				c.mu.Lock()
				c.lastErr = err
				c.mu.Unlock()
				c.log.Debug("connection attempt failed", "server", servers[idx], "err", err)
				continue
			}
			everUp = true
			began := time.Now()
			c.serve(cn)
			// Fail over: start the next round with the server after this one.
			next, connected = idx+1, time.Since(began) >= minHealthyConn
			break
		}
		if connected {
			round = 0
			continue
		}
		if !everUp && c.cfg.DialRounds > 0 && round+1 >= c.cfg.DialRounds {
			close(c.dialFailed)
			return
		}
		select {
		case <-time.After(c.backoff(round)):
		case <-c.ctx.Done():
		}
		round++
	}
}

// backoff returns the wait after round failed rounds: MinBackoff doubling
// up to MaxBackoff, with up to 50% jitter so that many clients that lost
// the same server do not come back in step.
func (c *Client) backoff(round int) time.Duration {
	d := c.cfg.MinBackoff
	for i := 0; i < round && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// connect makes one attempt to connect to addr and prepare the connection
// for requests.
func (c *Client) connect(addr string) (*conn, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.ConnectTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if c.cfg.TLS != nil {
		d := tls.Dialer{Config: c.cfg.TLS}
		nc, err = d.DialContext(ctx, "tcp", addr)
		// paho writes a packet as several writes, which a TLS connection
		// does not keep together: with two goroutines writing (requests,
		// the keep alive's PINGREQ) one packet lands inside another.
		// paho holds a writer's lock for the whole packet when it has one.
		nc = &lockedConn{Conn: nc}
		if err != nil && notTLS(err) {
			err = fmt.Errorf("TLS handshake with %s: %w (is it a plain MQTT listener? connect without TLS, or to its TLS port, 8883 by convention)", addr, err)
		}
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	cn := &conn{addr: addr}
	cn.ctx, cn.cancel = context.WithCancel(c.ctx)
	cn.pc = paho.NewClient(paho.ClientConfig{
		ClientID:          c.cfg.ClientID,
		Conn:              nc,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){c.received},
		OnClientError: func(err error) {
			c.log.Debug("connection error", "server", addr, "err", err)
			cn.cancel()
		},
		OnServerDisconnect: func(d *paho.Disconnect) {
			reason := ""
			if d.Properties != nil {
				reason = d.Properties.ReasonString
			}
			c.log.Info("server disconnected", "server", addr, "code", d.ReasonCode, "reason", reason)
			cn.cancel()
		},
		PublishHook: c.publishHook,
		PingHandler: newPinger(c.cfg.PingTimeout),
	})
	connect := &paho.Connect{
		ClientID:   c.cfg.ClientID,
		KeepAlive:  uint16(c.cfg.KeepAlive / time.Second),
		CleanStart: true, // registrations die with a connection anyway
	}
	if c.cfg.Username != "" {
		connect.UsernameFlag, connect.Username = true, c.cfg.Username
	}
	if c.cfg.Password != nil {
		connect.PasswordFlag, connect.Password = true, c.cfg.Password
	}
	ca, err := cn.pc.Connect(ctx, connect)
	if err == nil && ca.Properties != nil && ca.Properties.MaximumPacketSize != nil {
		cn.maxPacket = *ca.Properties.MaximumPacketSize
	}
	if err != nil {
		cn.cancel()
		if ca != nil && ca.ReasonCode >= 0x80 {
			refused := &ConnectRefusedError{ReasonCode: ca.ReasonCode}
			if ca.Properties != nil {
				refused.Reason = ca.Properties.ReasonString
			}
			err = refused
		}
		if c.cfg.TLS == nil && closedEarly(err) && speaksTLS(addr, c.cfg.ConnectTimeout) {
			return nil, fmt.Errorf("connect to %s: %w (the server speaks TLS on this port: connect with TLS, an mqtts:// address or dss --tls)", addr, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	// Subscribe before the first request or KEYNOTIFY: the server queues
	// nothing for a topic nobody listens to.
	sa, err := cn.pc.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: c.respTopic, QoS: 1},
		{Topic: wire.NotifyTopicFilter(c.cfg.ClientID), QoS: 1},
	}})
	if err == nil {
		for _, r := range sa.Reasons {
			if r >= 0x80 {
				err = fmt.Errorf("subscription refused with reason code %#x", r)
			}
		}
	}
	if err != nil {
		c.shut(cn)
		return nil, fmt.Errorf("subscribe on %s: %w", addr, err)
	}
	return cn, nil
}

// serve makes cn the client's connection until it ends or the client is
// closed.
func (c *Client) serve(cn *conn) {
	c.mu.Lock()
	c.conn, c.lastErr = cn, nil
	close(c.up)
	// The keys watched before the connection was published need
	// registering again; a watch that registers from now on does so
	// itself, on this connection.
	keys := c.watchedKeysLocked()
	c.mu.Unlock()
	c.log.Info("connected", "server", cn.addr)
	c.startResync(cn, keys)
	c.startRenewal(cn)

	select {
	case <-cn.pc.Done():
	case <-cn.ctx.Done():
	}

	c.mu.Lock()
	c.conn = nil
	c.up = make(chan struct{})
	c.mu.Unlock()
	if c.ctx.Err() == nil {
		c.log.Info("connection lost", "server", cn.addr)
	}
	c.shut(cn)
}

// shut ends a connection: a DISCONNECT if it is still up, then the wait for
// paho's goroutines.
func (c *Client) shut(cn *conn) {
	cn.cancel()
	_ = cn.pc.Disconnect(&paho.Disconnect{ReasonCode: 0})
	<-cn.pc.Done()
}

// closedEarly reports whether err is a connection the server closed
// before it answered CONNECT: what a TLS listener does with a plain
// CONNECT.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// notTLS reports whether a TLS handshake failed as it does against a
// listener that does not speak TLS.
func notTLS(err error) bool {
	var rh tls.RecordHeaderError
	return closedEarly(err) || errors.As(err, &rh)
}

// speaksTLS reports whether addr completes a TLS handshake, to explain a
// plain connection it closed unanswered. The probe sends nothing else,
// so the server's certificate need not be trusted.
func speaksTLS(addr string, timeout time.Duration) bool {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a probe: no data is sent
	ctx, cancel := context.WithTimeout(context.Background(), min(timeout, 2*time.Second))
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// lockedConn is a connection whose writers paho serializes packet by
// packet (it locks a writer that is a sync.Locker while it writes one).
type lockedConn struct {
	net.Conn
	sync.Mutex
}

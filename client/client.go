package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/wire"
)

// Client talks to a dss server, or to the first reachable one of a list.
// It keeps one MQTT 5 connection, reconnects (to the next server of the
// list) when it drops, and re-registers its watches on the new one.
// A Client is safe for concurrent use. Close it when done.
type Client struct {
	cfg          Config
	clock        *hlc.Clock
	log          *slog.Logger
	respTopic    string
	notifyPrefix string // the notification topic without the hex key

	// ctx ends when Close is called; every goroutine of the client and
	// every connection ends with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the supervisor, watch pumps, resyncs, lease renewers

	// publishHook, when set (by tests), sees every request before it is
	// sent.
	publishHook func(*paho.Publish)

	mu   sync.Mutex
	conn *conn         // guarded by mu; where requests go, nil while down
	up   chan struct{} // guarded by mu; closed when conn is set
	// dialFailed is closed when Dial should give up (Config.DialRounds).
	dialFailed chan struct{}
	lastErr    error                          // guarded by mu; why the last connection attempt failed
	calls      map[string]chan *paho.Publish  // guarded by mu; response channels by correlation data
	watches    map[string]map[*Watch]struct{} // guarded by mu; by key
	closed     bool                           // guarded by mu
}

// Dial starts a client for the servers of cfg and waits until it is
// connected to one of them, or until ctx ends. After that the client stays
// connected in the background until Close; ctx only bounds the wait.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	c.start()
	if _, err := c.awaitConn(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("dial %s: %w", strings.Join(c.cfg.Servers, ","), err)
	}
	return c, nil
}

func newClient(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:   cfg,
		clock: cfg.Clock,
		log:   cfg.Logger.With("client", cfg.ClientID),
		// The vendor's Go client's response topic. The client id is hex
		// encoded, so that any id makes a valid topic without wildcards.
		respTopic:    "clients/" + hexOf(cfg.ClientID) + "/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response",
		notifyPrefix: strings.TrimSuffix(wire.NotifyTopicFilter(cfg.ClientID), "+"),
		up:           make(chan struct{}),
		dialFailed:   make(chan struct{}),
		calls:        make(map[string]chan *paho.Publish),
		watches:      make(map[string]map[*Watch]struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// ID returns the MQTT client id.
func (c *Client) ID() string { return c.cfg.ClientID }

// Server returns the address of the server the client is connected to, or
// "" while it is not connected.
func (c *Client) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	return c.conn.addr
}

// Close ends the client's watches and leases (with ErrClosed), disconnects
// and waits for the client's goroutines to finish. Calls in progress
// return ErrClosed. Leases are not released: their keys expire after their
// TTL. Close is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var ws []*Watch
	for _, set := range c.watches {
		for w := range set {
			ws = append(ws, w)
		}
	}
	c.mu.Unlock()
	c.cancel()
	for _, w := range ws {
		w.end(ErrClosed)
	}
	c.wg.Wait()
	return nil
}

// goroutine runs f on a new goroutine that Close waits for, unless the
// client is closed already.
func (c *Client) goroutine(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// awaitConn returns the current connection, waiting for one if the client
// is between connections.
func (c *Client) awaitConn(ctx context.Context) (*conn, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		cn, up := c.conn, c.up
		c.mu.Unlock()
		if cn != nil {
			return cn, nil
		}
		select {
		case <-up:
		case <-c.ctx.Done():
			return nil, ErrClosed
		case <-c.dialFailed:
			c.mu.Lock()
			last := c.lastErr
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrUnreachable, last)
		case <-ctx.Done():
			c.mu.Lock()
			last := c.lastErr
			c.mu.Unlock()
			if last != nil {
				return nil, fmt.Errorf("not connected: %w (last connection attempt: %w)", ctx.Err(), last)
			}
			return nil, fmt.Errorf("not connected: %w", ctx.Err())
		}
	}
}

// isClosed reports whether err means that the client was closed.
func isClosed(err error) bool { return errors.Is(err, ErrClosed) }

func hexOf(s string) string {
	const digits = "0123456789ABCDEF"
	b := make([]byte, 2*len(s))
	for i := 0; i < len(s); i++ {
		b[2*i], b[2*i+1] = digits[s[i]>>4], digits[s[i]&0x0f]
	}
	return string(b)
}

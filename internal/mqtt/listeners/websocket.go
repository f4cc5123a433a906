package listeners

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// TypeWebSocket names the WebSocket listener's protocol. dss.
const TypeWebSocket = "ws"

// Subprotocol is the WebSocket subprotocol of MQTT [MQTT-6.0.0-3],
// [MQTT-6.0.0-4]. dss.
const Subprotocol = "mqtt"

// closeLinger bounds how long a WebSocket connection's TCP connection is
// read and discarded after the server closed its side, so that what the
// server sent last (a DISCONNECT) reaches the client rather than being
// lost to a reset: the kernel answers data that arrives on a closed
// socket with one, and the client's kernel then drops what it had not
// handed to the client yet. dss.
const closeLinger = time.Second

// WebSocketConfig configures a WebSocket listener. dss.
type WebSocketConfig struct {
	// ID names the listener; Address is where it listens (HOST:PORT).
	ID      string
	Address string
	// TLSConfig, when set, makes it a listener of WebSockets over TLS
	// (wss).
	TLSConfig *tls.Config
	// Admit, when set, decides whether an upgrade request may become a
	// connection: a non-nil error refuses it with 403 and the error's
	// text. The browser's Origin and the Host it asked for are the
	// request's; whatever else the client says is checked by MQTT's own
	// CONNECT.
	Admit func(r *http.Request) error
	// HandshakeTimeout bounds the upgrade request; 0 means 10 seconds.
	HandshakeTimeout time.Duration
}

// WebSocket is a listener for MQTT over WebSocket (RFC 6455; MQTT 5.0,
// section 6): an HTTP server whose requests, upgraded to WebSocket with
// the subprotocol "mqtt", become connections of the core. Each one is a
// net.Conn that carries the MQTT byte stream in binary messages, split
// at any byte and into any frames; a text message, or a frame that RFC
// 6455 forbids, ends that connection alone. The net.Conn offers no file
// descriptor (syscall.Conn), so the core reads it on a goroutine of its
// own, never in a read loop. dss.
type WebSocket struct {
	config    WebSocketConfig
	listen    net.Listener
	srv       *http.Server
	log       *slog.Logger
	establish EstablishFn

	// ctx ends every connection's reads and writes when the listener
	// closes.
	ctx    context.Context
	cancel context.CancelFunc
	end    atomic.Bool
	// handlers counts the requests being served (an upgraded connection
	// is served until it ends); background the goroutines of connections
	// that read them, close them and drain their TCP connections.
	handlers   sync.WaitGroup
	background sync.WaitGroup
	serving    sync.WaitGroup

	acceptErrors atomic.Int64
	burst        acceptBurst
}

// NewWebSocket returns a WebSocket listener on config.Address. dss.
func NewWebSocket(config WebSocketConfig) *WebSocket {
	if config.HandshakeTimeout <= 0 {
		config.HandshakeTimeout = 10 * time.Second
	}
	l := &WebSocket{config: config}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// ID returns the id of the listener.
func (l *WebSocket) ID() string { return l.config.ID }

// Address returns the address the listener is bound to.
func (l *WebSocket) Address() string {
	if l.listen != nil {
		return l.listen.Addr().String()
	}
	return l.config.Address
}

// Protocol returns "ws", or "wss" with TLS.
func (l *WebSocket) Protocol() string {
	if l.config.TLSConfig != nil {
		return "wss"
	}
	return TypeWebSocket
}

// Init binds the listener.
func (l *WebSocket) Init(log *slog.Logger) error {
	l.log = log
	ln, err := net.Listen("tcp", l.config.Address)
	if err != nil {
		return err
	}
	var served net.Listener = &lingerListener{Listener: ln, l: l}
	if l.config.TLSConfig != nil {
		served = tls.NewListener(served, l.config.TLSConfig)
	}
	l.listen = served
	l.srv = &http.Server{
		Handler:           l,
		ReadHeaderTimeout: l.config.HandshakeTimeout,
		// An upgrade request is one small request; nothing else is
		// served.
		MaxHeaderBytes: 16 << 10,
		IdleTimeout:    l.config.HandshakeTimeout,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		BaseContext:    func(net.Listener) context.Context { return l.ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, rawConnKey{}, c)
		},
	}
	return nil
}

// Serve accepts connections until the listener closes. net/http's
// server retries accept errors that may pass (out of descriptors) with
// waits that grow to a second; each is counted (AcceptErrors) and
// reported by Failing until a connection is accepted again.
func (l *WebSocket) Serve(establish EstablishFn) {
	l.establish = establish
	l.serving.Add(1)
	defer l.serving.Done()
	if l.end.Load() {
		return
	}
	if err := l.srv.Serve(l.listen); err != nil && !errors.Is(err, http.ErrServerClosed) && !l.end.Load() {
		l.log.Error("the WebSocket listener stopped", "error", err)
	}
}

// ServeHTTP upgrades a request to an MQTT connection.
func (l *WebSocket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.handlers.Add(1)
	defer l.handlers.Done()
	if l.end.Load() {
		http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
		return
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Upgrade", "websocket")
		http.Error(w, "this is an MQTT over WebSocket listener: connect with a WebSocket client and the subprotocol mqtt", http.StatusUpgradeRequired)
		return
	}
	if !headerHasToken(r.Header, "Sec-WebSocket-Protocol", Subprotocol) {
		// [MQTT-6.0.0-3]: the client offers "mqtt".
		http.Error(w, "MQTT over WebSocket needs the subprotocol mqtt (Sec-WebSocket-Protocol: mqtt)", http.StatusBadRequest)
		return
	}
	if l.config.Admit != nil {
		if err := l.config.Admit(r); err != nil {
			l.log.Debug("WebSocket upgrade refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "host", r.Host, "error", err)
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{Subprotocol},
		// Admit has checked the origin, by the server's rules.
		InsecureSkipVerify: true,
	})
	if err != nil {
		l.log.Debug("WebSocket upgrade failed", "remote", r.RemoteAddr, "error", err)
		return
	}
	raw, _ := r.Context().Value(rawConnKey{}).(net.Conn)
	conn := newWSConn(l, ws, raw, r.TLS)
	if l.end.Load() {
		_ = conn.Close()
		return
	}
	if err := l.establish(l.config.ID, conn); err != nil {
		l.log.Debug("client connection ended", "error", err)
	}
}

// headerHasToken reports whether one of the comma-separated values of
// header name is token, ignoring case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// AcceptErrors returns how many accept errors the listener met.
func (l *WebSocket) AcceptErrors() int64 { return l.acceptErrors.Load() }

// Failing returns the error of the burst of accept errors under way, or
// nil while the listener accepts connections.
func (l *WebSocket) Failing() error { return l.burst.failing() }

// Close closes the listener and its clients' connections, and returns
// once the requests it served have ended.
func (l *WebSocket) Close(closeClients CloseFn) {
	if !l.end.CompareAndSwap(false, true) {
		return
	}
	closeClients(l.config.ID)
	if l.srv != nil {
		_ = l.srv.Close()
	}
	if l.listen != nil {
		_ = l.listen.Close() // Serve may not have begun
	}
	l.cancel()
	l.burst.stop()
	l.serving.Wait()
	l.handlers.Wait()
	l.background.Wait()
}

// rawConnKey keys the accepted connection of a request in its context.
type rawConnKey struct{}

// lingerListener counts accept errors and hands out connections that
// linger as they close.
type lingerListener struct {
	net.Listener
	l *WebSocket
}

func (ln *lingerListener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		if !ln.l.end.Load() && !errors.Is(err, net.ErrClosed) {
			ln.l.acceptErrors.Add(1)
			if ln.l.burst.failed(err) {
				ln.l.log.Error("accepting WebSocket connections failed; retrying", "error", err)
			}
			ln.l.burst.retrying(func(errors int64) {
				ln.l.log.Info("accepting WebSocket connections again", "errors", errors)
			})
		}
		return nil, err
	}
	ln.l.burst.accepted()
	return &lingerConn{Conn: c, l: ln.l}, nil
}

// lingerConn is a TCP connection whose Close shuts its sending side and
// reads what the client still sends, for up to closeLinger, before it
// closes (see closeLinger).
type lingerConn struct {
	net.Conn
	l    *WebSocket
	once sync.Once
	err  error
}

func (c *lingerConn) Close() error {
	c.once.Do(func() {
		tc, ok := c.Conn.(*net.TCPConn)
		if !ok {
			c.err = c.Conn.Close()
			return
		}
		if tc.CloseWrite() != nil || tc.SetReadDeadline(time.Now().Add(closeLinger)) != nil {
			c.err = tc.Close()
			return
		}
		c.l.background.Add(1)
		go func() {
			defer c.l.background.Done()
			_, _ = io.Copy(io.Discard, tc)
			_ = tc.Close()
		}()
	})
	return c.err
}

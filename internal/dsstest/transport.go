package dsstest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/coder/websocket"
)

// TransportEnv names the environment variable that selects how the
// clients of this package reach a server that StartServer started:
// "tcp" (the default) to its MQTT listener, "ws" as MQTT over WebSocket to
// its WebSocket listener, which StartServer then opens. Tests that run a
// suite again over WebSockets set it in a child process.
const TransportEnv = "DSS_TEST_TRANSPORT"

// OverWebSocket reports whether clients connect over WebSocket
// (TransportEnv=ws).
func OverWebSocket() bool { return os.Getenv(TransportEnv) == "ws" }

// wsAddrs maps the MQTT listener address of each server StartServer
// started with a WebSocket listener to that listener's address, so that
// a test that dials the server's Addr reaches it over the transport in
// force.
var wsAddrs sync.Map

// DialMQTT opens a connection for an MQTT client to the server whose MQTT
// listener is addr: over TCP, or (TransportEnv=ws) over a WebSocket to
// the WebSocket listener of that server.
func DialMQTT(addr string) (net.Conn, error) {
	if OverWebSocket() {
		ws, ok := wsAddrs.Load(addr)
		if !ok {
			// Not silently TCP: a suite run over WebSockets must not
			// pass without them.
			return nil, fmt.Errorf("%s=ws: no server started by dsstest.StartServer listens on %s, so its WebSocket listener is not known", TransportEnv, addr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		return DialWebSocket(ctx, "ws://"+ws.(string)+"/mqtt", nil)
	}
	return net.DialTimeout("tcp", addr, Timeout)
}

// DialWebSocket opens an MQTT over WebSocket connection to url (ws:// or
// wss://, with tlsConfig for the latter) and returns it as a net.Conn
// whose writes are binary messages, and whose read deadlines end a wait
// and not the connection. Its writers are serialized packet by packet for
// paho (see lockedConn).
func DialWebSocket(ctx context.Context, url string, tlsConfig *tls.Config) (net.Conn, error) {
	opts := &websocket.DialOptions{Subprotocols: []string{"mqtt"}}
	if tlsConfig != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	}
	c, resp, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("websocket %s: %s: %w", url, resp.Status, err)
		}
		return nil, err
	}
	if c.Subprotocol() != "mqtt" {
		_ = c.CloseNow()
		return nil, fmt.Errorf("websocket %s: subprotocol %q, want mqtt", url, c.Subprotocol())
	}
	return &lockedConn{Conn: newWSClientConn(c)}, nil
}

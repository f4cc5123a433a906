package listeners

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// startWebSocket serves a WebSocket listener whose connections are handed
// to conns, and closes it when the test ends.
func startWebSocket(t *testing.T) (*WebSocket, chan net.Conn) {
	t.Helper()
	l := NewWebSocket(WebSocketConfig{ID: "ws", Address: "127.0.0.1:0"})
	if err := l.Init(slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Serve(func(_ string, c net.Conn) error {
			conns <- c
			_, err := io.Copy(io.Discard, c) // until the connection ends
			return err
		})
	}()
	t.Cleanup(func() {
		l.Close(func(string) {
			select {
			case c := <-conns:
				_ = c.Close()
			default:
			}
		})
		<-done
	})
	return l, conns
}

func dialWebSocket(t *testing.T, l *WebSocket) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+l.Address()+"/mqtt", &websocket.DialOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// A WebSocket connection offers no descriptor: the core reads it on a
// goroutine, never in an epoll read loop, which would read the framing
// as MQTT.
func TestWebSocketConnHasNoDescriptor(t *testing.T) {
	l, conns := startWebSocket(t)
	dialWebSocket(t, l)
	c := <-conns
	if _, ok := c.(syscall.Conn); ok {
		t.Fatal("the WebSocket connection offers its descriptor (syscall.Conn)")
	}
	conns <- c
}

// A read deadline ends the wait of a Read, not the connection, as a TCP
// connection's does: the core wakes its reader with one and reads on.
func TestWebSocketReadDeadlineKeepsTheConnection(t *testing.T) {
	l := NewWebSocket(WebSocketConfig{ID: "ws", Address: "127.0.0.1:0"})
	if err := l.Init(slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	timedOut := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Serve(func(_ string, c net.Conn) error {
			defer c.Close()
			buf := make([]byte, 16)
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
				got <- "first read: " + errString(err)
				close(timedOut)
				return err
			}
			close(timedOut)
			_ = c.SetReadDeadline(time.Time{})
			n, err := io.ReadFull(c, buf[:6])
			got <- string(buf[:n]) + errString(err)
			_, _ = c.Write([]byte("bye"))
			return nil
		})
	}()
	defer func() {
		l.Close(func(string) {})
		<-done
	}()
	c := dialWebSocket(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	<-timedOut
	for _, m := range []string{"hel", "lo!"} {
		if err := c.Write(ctx, websocket.MessageBinary, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if s := <-got; s != "hello!" {
		t.Fatalf("read across messages after a deadline: %q", s)
	}
	typ, p, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || string(p) != "bye" {
		t.Fatalf("read: %v %q %v", typ, p, err)
	}
	// Close ends with a normal closure.
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after Close: %v, want a normal closure", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

func TestRetryable(t *testing.T) {
	write, read := &request{}, &request{readOnly: true}
	for _, tt := range []struct {
		name string
		err  error
		r    *request
		want bool
	}{
		{"not sent", errNotSent, write, true},
		{"unavailable", ErrUnavailable, write, true},
		{"busy", ErrBusy, write, true},
		{"refused while shutting down", &RefusedError{ReasonCode: 0x80}, write, true},
		{"server busy", &RefusedError{ReasonCode: 0x89}, write, true},
		{"refused for a bad request", &RefusedError{ReasonCode: 0x83}, write, false},
		{"lost write", ErrConnectionLost, write, false},
		{"lost read", ErrConnectionLost, read, true},
		{"closed", ErrClosed, read, false},
		{"server error", ErrFencingTokenRequired, read, false},
		{"deadline", context.DeadlineExceeded, read, false},
	} {
		c := &Client{}
		if got := c.retryable(tt.r, tt.err); got != tt.want {
			t.Errorf("%s: retryable %v, want %v", tt.name, got, tt.want)
		}
	}
}

// cutProxy forwards MQTT connections to a server and cuts the first one
// that carries a request containing marker: it closes the client's side,
// then forwards the request, so the server executes it and its response is
// lost.
type cutProxy struct {
	ln     net.Listener
	target string
	marker []byte

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func startCutProxy(t *testing.T, target, marker string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, marker: []byte(marker)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(in, out)
			_ = in.Close()
		}()
		go func() {
			defer p.wg.Done()
			defer in.Close()
			defer out.Close()
			for {
				pk, err := packets.ReadPacket(in)
				if err != nil {
					return
				}
				if pub, ok := pk.Content.(*packets.Publish); ok && pub.Topic == wire.RequestTopic && bytes.Contains(pub.Payload, p.marker) && p.cutOnce() {
					// The client's side goes first, so that the
					// response cannot make it back.
					_ = in.Close()
					_, _ = pk.WriteTo(out)
					return
				}
				if _, err := pk.WriteTo(out); err != nil {
					return
				}
			}
		}()
	}
}

func (p *cutProxy) cutOnce() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.cut = true
	return true
}

// TestLostWriteIsReported cuts the connection right after a SET went out:
// the server applied it, but the client cannot know, and says so.
func TestLostWriteIsReported(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	p := startCutProxy(t, s.Addr(), "cut-me")
	c := dial(t, p.addr())
	_, err := c.Set(ctxT(t), "cut-me", []byte("v"))
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("Set on a cut connection: %v, want ErrConnectionLost", err)
	}
	// It did land: reading tells.
	e, found, err := c.Get(ctxT(t), "cut-me")
	if err != nil || !found || string(e.Value) != "v" {
		t.Fatalf("Get after the lost write: %q found %v err %v", e.Value, found, err)
	}
}

// TestLostReadIsRetried cuts the connection right after a GET went out:
// the client sends it again on the next connection.
func TestLostReadIsRetried(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	p := startCutProxy(t, s.Addr(), "cut-me")
	c := dial(t, p.addr())
	e, found, err := c.Get(ctxT(t), "cut-me")
	if err != nil || found {
		t.Fatalf("Get across a cut: %+v found %v err %v; want a clean miss", e, found, err)
	}
	p.mu.Lock()
	cut := p.cut
	p.mu.Unlock()
	if !cut {
		t.Fatal("the proxy never cut the connection")
	}
}

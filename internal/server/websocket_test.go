package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// TestProtocolOverWebSocket runs the protocol tests again with every
// client connected over MQTT over WebSocket (DSS_TEST_TRANSPORT=ws), in a
// process of its own: a request over a WebSocket is answered exactly as
// over TCP. It runs beside the runs through a cluster's roles.
func TestProtocolOverWebSocket(t *testing.T) {
	if dsstest.OverWebSocket() || os.Getenv(targetEnv) != "" {
		t.Skip("this run is one of them")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	t.Parallel()
	run := "^(" + strings.Join(protocolTests, "|") + ")$"
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1", "-test.timeout=15m", "-test.v")
	cmd.Env = append(os.Environ(), dsstest.TransportEnv+"=ws")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the protocol tests over WebSocket: %v\n%s", err, out)
	}
	for _, name := range protocolTests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass over WebSocket", name)
		}
	}
}

func wsURL(s *server.Server) string { return "ws://" + s.WSAddr() + "/mqtt" }

// dialWS opens a WebSocket with the subprotocol mqtt to the server's
// WebSocket listener.
func dialWS(t *testing.T, s *server.Server) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(s), &websocket.DialOptions{Subprotocols: []string{"mqtt"}})
	if err != nil {
		t.Fatalf("dial %s: %v", wsURL(s), err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// session is the bytes of a whole MQTT session: CONNECT, SUBSCRIBE to the
// response topic, a SET of key to value and a GET of it.
func session(t *testing.T, id, key, value string) []byte {
	t.Helper()
	var b bytes.Buffer
	write := func(p interface {
		WriteTo(io.Writer) (int64, error)
	}) {
		if _, err := p.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
	}
	rt := "clients/" + id + "/response"
	cp := packets.NewControlPacket(packets.CONNECT)
	c := cp.Content.(*packets.Connect)
	c.ProtocolName, c.ProtocolVersion, c.ClientID, c.CleanStart, c.KeepAlive = "MQTT", 5, id, true, 30
	write(cp)
	sp := packets.NewControlPacket(packets.SUBSCRIBE)
	s := sp.Content.(*packets.Subscribe)
	s.PacketID, s.Subscriptions = 1, []packets.SubOptions{{Topic: rt, QoS: 1}}
	write(sp)
	for i, req := range [][]byte{dsstest.Cmd("SET", key, value), dsstest.Cmd("GET", key)} {
		pp := packets.NewControlPacket(packets.PUBLISH)
		p := pp.Content.(*packets.Publish)
		p.QoS, p.PacketID, p.Topic, p.Payload = 1, uint16(2+i), wire.RequestTopic, req
		p.Properties = &packets.Properties{ResponseTopic: rt, CorrelationData: []byte{byte(i)},
			User: []packets.User{{Key: wire.PropTimestamp, Value: dsstest.Now()}}}
		write(pp)
	}
	return b.Bytes()
}

// answers reads the server's answers to session from c: the responses by
// correlation data, once CONNACK, SUBACK and both PUBACKs came.
func answers(t *testing.T, c *websocket.Conn) map[byte]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	r := websocket.NetConn(ctx, c, websocket.MessageBinary)
	responses := map[byte]string{}
	acks := 0
	for acks < 4 || len(responses) < 2 {
		cp, err := packets.ReadPacket(r)
		if err != nil {
			t.Fatalf("read: %v (acks %d, responses %v)", err, acks, responses)
		}
		switch p := cp.Content.(type) {
		case *packets.Connack:
			if p.ReasonCode != 0 {
				t.Fatalf("CONNACK %#x", p.ReasonCode)
			}
			acks++
		case *packets.Suback, *packets.Puback:
			acks++
		case *packets.Publish:
			responses[p.Properties.CorrelationData[0]] = string(p.Payload)
			if p.QoS == 1 {
				ack := packets.NewControlPacket(packets.PUBACK)
				ack.Content.(*packets.Puback).PacketID = p.PacketID
				var b bytes.Buffer
				_, _ = ack.WriteTo(&b)
				if err := c.Write(ctx, websocket.MessageBinary, b.Bytes()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return responses
}

func checkAnswers(t *testing.T, what string, got map[byte]string, value string) {
	t.Helper()
	if got[0] != "+OK\r\n" || got[1] != fmt.Sprintf("$%d\r\n%s\r\n", len(value), value) {
		t.Fatalf("%s: responses %q", what, got)
	}
}

// MQTT over WebSocket is a byte stream: packets may be split anywhere,
// across messages and across the frames of one message.
func TestWebSocketFramesSplitAtEveryByte(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := session(t, "probe", "k", "v")
	for k := 1; k < len(b); k++ {
		value := fmt.Sprint("v", k)
		b := session(t, fmt.Sprint("split-", k), "k", value)
		k := min(k, len(b)-1)

		// Two messages, split at k.
		c := dialWS(t, s)
		for _, part := range [][]byte{b[:k], b[k:]} {
			if err := c.Write(ctx, websocket.MessageBinary, part); err != nil {
				t.Fatal(err)
			}
		}
		checkAnswers(t, fmt.Sprintf("messages split at %d", k), answers(t, c), value)
		_ = c.CloseNow()

		// One message of two frames, split at k.
		c = dialWS(t, s)
		w, err := c.Writer(ctx, websocket.MessageBinary)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range [][]byte{b[:k], b[k:]} {
			if _, err := w.Write(part); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		checkAnswers(t, fmt.Sprintf("frames split at %d", k), answers(t, c), value)
		_ = c.CloseNow()
	}

	// Every byte a message of its own; every byte a frame of its own.
	b = session(t, "bytes", "k", "each byte")
	c := dialWS(t, s)
	for i := range b {
		if err := c.Write(ctx, websocket.MessageBinary, b[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	checkAnswers(t, "a message per byte", answers(t, c), "each byte")
	b = session(t, "frames", "k", "each frame")
	c = dialWS(t, s)
	w, err := c.Writer(ctx, websocket.MessageBinary)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		if _, err := w.Write(b[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkAnswers(t, "a frame per byte", answers(t, c), "each frame")
}

// upgrade opens a TCP connection to the WebSocket listener and asks for
// the upgrade with header; it returns the connection after a 101, or the
// status of a refusal.
func upgrade(t *testing.T, addr string, header map[string]string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	h := map[string]string{
		"Host": addr, "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": "mqtt",
	}
	for k, v := range header {
		if v != "" {
			h[k] = v
		}
	}
	var req strings.Builder
	req.WriteString("GET /mqtt HTTP/1.1\r\n")
	for k, v := range h {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n")
	if _, err := conn.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(dsstest.Timeout))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return conn, br, resp
}

// frame encodes a WebSocket frame as a client sends it (masked unless
// unmasked is set); first is the first byte (FIN, RSV, opcode).
func frame(first byte, payload []byte, unmasked bool) []byte {
	b := []byte{first, 0}
	switch n := len(payload); {
	case n < 126:
		b[1] = byte(n)
	case n < 1<<16:
		b[1] = 126
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b[1] = 127
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if unmasked {
		return append(b, payload...)
	}
	b[1] |= 0x80
	key := []byte{0x12, 0x34, 0x56, 0x78}
	b = append(b, key...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// A frame that RFC 6455 forbids, or a text message, ends its own
// connection and nothing else: a client connected over WebSocket before
// and one over TCP go on being served.
func TestAMalformedWebSocketFrameEndsOnlyItsConnection(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0"})
	overWS := dsstest.DialWith(t, "", "over-ws", dsstest.Login{WebSocket: wsURL(s)})
	overWS.Subscribe(overWS.ResponseTopic)
	overTCP := dsstest.Dial(t, s.Addr(), "over-tcp")
	connect := session(t, "bad", "k", "v")
	connect = connect[:bytes.IndexByte(connect[1:], 0x82)+1] // CONNECT alone
	cases := []struct {
		name  string
		bytes []byte
	}{
		{"unmasked", frame(0x82, connect, true)},
		{"reserved bits", frame(0x82|0x40, connect, false)},
		{"reserved opcode", frame(0x83, connect, false)},
		{"text message", frame(0x81, []byte("hello"), false)},
		{"text after CONNECT", append(frame(0x82, connect, false), frame(0x81, []byte("{}"), false)...)},
		{"continuation first", frame(0x80, connect, false)},
		{"fragmented ping", frame(0x09, []byte("p"), false)},
		{"control frame over 125 bytes", frame(0x89, bytes.Repeat([]byte("p"), 126), false)},
		{"data frame inside a fragmented message", append(frame(0x02, connect[:3], false), frame(0x82, connect[3:], false)...)},
		{"length past 2^63", append([]byte{0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0}, 1, 2, 3, 4)},
		{"malformed MQTT in a good frame", frame(0x82, []byte{0x10, 0x03, 0, 0, 0}, false)},
	}
	for i, tc := range cases {
		conn, br, resp := upgrade(t, s.WSAddr(), nil)
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: upgrade: %s", tc.name, resp.Status)
		}
		// One byte a TCP write: the frame reader must not care.
		for j := range tc.bytes {
			if _, err := conn.Write(tc.bytes[j : j+1]); err != nil {
				break // the server may have closed already
			}
		}
		_ = conn.SetReadDeadline(time.Now().Add(dsstest.Timeout))
		if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("%s: the connection did not end: %v", tc.name, err)
		}
		key := fmt.Sprint("k", i)
		expect(t, tc.name+": over WebSocket", overWS.Set([]string{key, "v"}), "+OK\r\n", "any")
		expect(t, tc.name+": over TCP", overTCP.Request(dsstest.Cmd("GET", key)), "$1\r\nv\r\n", "any")
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

func TestWebSocketUpgradeRefusals(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0"})
	// MQTT needs the subprotocol mqtt [MQTT-6.0.0-3].
	if _, _, resp := upgrade(t, s.WSAddr(), map[string]string{"Sec-WebSocket-Protocol": "chat"}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("without the subprotocol mqtt: %s", resp.Status)
	}
	// A plain request learns what the listener is.
	if code, body := dsstest.HTTPGet(t, s.WSAddr(), "/"); code != http.StatusUpgradeRequired || !strings.Contains(body, "MQTT over WebSocket") {
		t.Fatalf("a plain GET: %d %q", code, body)
	}
	// The negotiated subprotocol is mqtt [MQTT-6.0.0-4].
	conn, _, resp := upgrade(t, s.WSAddr(), map[string]string{"Sec-WebSocket-Protocol": "chat, mqtt"})
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Protocol") != "mqtt" {
		t.Fatalf("offering chat and mqtt: %s, subprotocol %q", resp.Status, resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	_ = conn.Close()
}

// Without authentication, the WebSocket listener serves this machine's
// pages only: a page of another site, or one that reaches 127.0.0.1
// through a name of its own (DNS rebinding), is refused; with
// authentication, pages of the listener's host and of --ws-origins.
func TestWebSocketOrigins(t *testing.T) {
	open := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0"})
	port := open.WSAddr()[strings.LastIndexByte(open.WSAddr(), ':'):]
	for _, tc := range []struct {
		origin, host string
		want         int
	}{
		{"", "", http.StatusSwitchingProtocols},
		{"http://localhost:9090", "localhost" + port, http.StatusSwitchingProtocols},
		{"http://127.0.0.1:9090", "", http.StatusSwitchingProtocols},
		{"https://evil.example", "", http.StatusForbidden},
		{"http://evil.example:9090", "evil.example" + port, http.StatusForbidden},
		{"", "evil.example" + port, http.StatusForbidden},
		{"null", "", http.StatusForbidden},
	} {
		conn, _, resp := upgrade(t, open.WSAddr(), map[string]string{"Origin": tc.origin, "Host": tc.host})
		if resp.StatusCode != tc.want {
			t.Errorf("no authentication, Origin %q, Host %q: %s, want %d", tc.origin, tc.host, resp.Status, tc.want)
		}
		_ = conn.Close()
	}

	users := usersFile(t, "alice", "pw")
	authed := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0", Users: users, WSOrigins: []string{"https://app.example", "https://*.plant.example"}})
	for _, tc := range []struct {
		origin, host string
		want         int
	}{
		{"", "", http.StatusSwitchingProtocols},
		{"http://127.0.0.1:9090", "", http.StatusSwitchingProtocols},
		{"https://dss.example", "dss.example" + port, http.StatusSwitchingProtocols},
		{"https://app.example", "dss.example" + port, http.StatusSwitchingProtocols},
		{"https://line-1.plant.example", "", http.StatusSwitchingProtocols},
		{"https://evil.example", "dss.example" + port, http.StatusForbidden},
		{"http://app.example", "", http.StatusForbidden},
	} {
		conn, _, resp := upgrade(t, authed.WSAddr(), map[string]string{"Origin": tc.origin, "Host": tc.host})
		if resp.StatusCode != tc.want {
			t.Errorf("with authentication, Origin %q, Host %q: %s, want %d", tc.origin, tc.host, resp.Status, tc.want)
		}
		_ = conn.Close()
	}
	// The same login as over TCP.
	dsstest.DialWith(t, "", "alice", dsstest.Login{WebSocket: wsURL(authed), Username: "alice", Password: "pw"})
	refusedWith(t, "", "nobody", dsstest.Login{WebSocket: wsURL(authed)}, 0x87)
	refusedWith(t, "", "wrong", dsstest.Login{WebSocket: wsURL(authed), Username: "alice", Password: "x"}, 0x86)
}

// A WebSocket listener beyond loopback needs authentication, as the MQTT
// listener does.
func TestWebSocketListenerBeyondLoopbackNeedsAuthentication(t *testing.T) {
	for _, cfg := range []server.Config{
		{Listen: "127.0.0.1:0", WSListen: "0.0.0.0:0"},
	} {
		cfg.Logger = dsstest.Logger()
		if s, err := server.New(cfg); !errors.Is(err, server.ErrExposed) {
			if err == nil {
				_ = s.Shutdown(context.Background())
			}
			t.Fatalf("WebSocket listener on 0.0.0.0 without authentication: %v, want ErrExposed", err)
		}
	}
	s := dsstest.StartServer(t, server.Config{WSListen: "0.0.0.0:0", Users: usersFile(t, "alice", "pw")})
	if s.WSAddr() == "" {
		t.Fatal("no WebSocket listener")
	}
	if _, err := server.New(server.Config{WSSListen: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("--wss-listen without a certificate: %v", err)
	}
}

// Over TLS, a WebSocket client logs in with a password or with a client
// certificate, as over the TLS listener.
func TestWebSocketOverTLSWithClientCertificates(t *testing.T) {
	s, ca := tlsServer(t, server.Config{Users: usersFile(t, "alice", "alice-pw"), TLSClientCA: "-", WSSListen: "127.0.0.1:0"})
	url := "wss://" + s.WSSAddr() + "/mqtt"
	line1 := ca.Client("line-1", pkix.Name{CommonName: "line-1"})
	byCert := dsstest.DialWith(t, "", "line-1", dsstest.Login{WebSocket: url, TLS: ca.ClientTLS(line1)})
	byCert.Subscribe(byCert.ResponseTopic)
	expect(t, "SET over wss", byCert.Set([]string{"k", "v"}), "+OK\r\n", "any")
	dsstest.DialWith(t, "", "alice", dsstest.Login{WebSocket: url, TLS: ca.ClientTLS(), Username: "alice", Password: "alice-pw"})
	refusedWith(t, "", "nothing", dsstest.Login{WebSocket: url, TLS: ca.ClientTLS()}, 0x87)
}

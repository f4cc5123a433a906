package dsstest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/wire"
)

// Client is a raw MQTT 5 client (paho) connected to a server under test.
// Responses to its requests are matched by correlation data; every other
// message it receives goes to Messages.
type Client struct {
	t  testing.TB
	ID string
	// Paho is the underlying client, for anything the helpers lack.
	Paho *paho.Client
	// ResponseTopic is the topic Request asks responses on; Dial
	// subscribes to it.
	ResponseTopic string
	// Messages receives every publish that is not a response to Request.
	Messages chan *paho.Publish
	// Disconnects receives the DISCONNECT packets the server sends.
	Disconnects chan *paho.Disconnect

	mu      sync.Mutex
	waiting map[string]chan *paho.Publish // by correlation data
}

// Dial connects a client with the given id and subscribes it to its
// response topic. The client disconnects when the test ends.
func Dial(t testing.TB, addr, id string) *Client {
	t.Helper()
	c := DialNoSubscribe(t, addr, id)
	c.Subscribe(c.ResponseTopic)
	return c
}

// DialNoSubscribe connects a client without subscribing to anything.
func DialNoSubscribe(t testing.TB, addr, id string) *Client {
	t.Helper()
	return DialWith(t, addr, id, Login{})
}

// Login is what a client presents when it connects: a user name and
// password (each sent when not empty), and TLS (nil for plain TCP).
type Login struct {
	Username string
	Password string
	TLS      *tls.Config
	// WebSocket, when set, is the URL (ws:// or wss://, with TLS) of the
	// WebSocket listener to connect to instead of addr.
	WebSocket string
	// Will, when set, is the client's Last Will.
	Will *paho.WillMessage
}

// DialWith connects a client that presents login, without subscribing to
// anything, and fails the test if the server refuses it.
func DialWith(t testing.TB, addr, id string, login Login) *Client {
	t.Helper()
	c, ca, err := Connect(t, addr, id, login)
	if err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	if ca.ReasonCode != 0 {
		t.Fatalf("connect %s: reason code %#x", id, ca.ReasonCode)
	}
	return c
}

// Connect connects a client that presents login and returns the server's
// CONNACK: the client is usable only when its reason code is 0. An error
// is a failure before a CONNACK (a refused TLS handshake); a CONNACK that
// refuses comes with a nil error.
func Connect(t testing.TB, addr, id string, login Login) (*Client, *paho.Connack, error) {
	t.Helper()
	var conn net.Conn
	var err error
	if login.WebSocket != "" {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		conn, err = DialWebSocket(ctx, login.WebSocket, login.TLS)
		cancel()
	} else if login.TLS != nil {
		var tc *tls.Conn
		tc, err = tls.DialWithDialer(&net.Dialer{Timeout: Timeout}, "tcp", addr, login.TLS)
		// paho writes a packet as several writes, which TLS does not keep
		// together; it holds a writer's lock for the whole packet.
		conn = &lockedConn{Conn: tc}
	} else {
		conn, err = DialMQTT(addr)
	}
	if err != nil {
		return nil, nil, err
	}
	c := &Client{
		t:             t,
		ID:            id,
		ResponseTopic: "clients/" + id + "/services/statestore/_any_/command/invoke/response",
		Messages:      make(chan *paho.Publish, 4096),
		Disconnects:   make(chan *paho.Disconnect, 4),
		waiting:       make(map[string]chan *paho.Publish),
	}
	c.Paho = paho.NewClient(paho.ClientConfig{
		Conn:               conn,
		OnPublishReceived:  []func(paho.PublishReceived) (bool, error){c.received},
		OnServerDisconnect: func(d *paho.Disconnect) { c.Disconnects <- d },
		PacketTimeout:      Timeout,
	})
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cp := &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true, WillMessage: login.Will}
	if login.Username != "" {
		cp.UsernameFlag, cp.Username = true, login.Username
	}
	if login.Password != "" {
		cp.PasswordFlag, cp.Password = true, []byte(login.Password)
	}
	ca, err := c.Paho.Connect(ctx, cp)
	if ca != nil && ca.ReasonCode >= 0x80 {
		_ = conn.Close()
		return nil, ca, nil
	}
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	t.Cleanup(func() { _ = c.Paho.Disconnect(&paho.Disconnect{}) })
	return c, ca, nil
}

func (c *Client) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	if p.Properties != nil && p.Properties.CorrelationData != nil {
		c.mu.Lock()
		ch, ok := c.waiting[string(p.Properties.CorrelationData)]
		delete(c.waiting, string(p.Properties.CorrelationData))
		c.mu.Unlock()
		if ok {
			ch <- p
			return true, nil
		}
	}
	select {
	case c.Messages <- p:
	default:
		c.t.Errorf("client %s: message buffer full, dropped a message on %s", c.ID, p.Topic)
	}
	return true, nil
}

// Subscribe subscribes to the filters with QoS 1.
func (c *Client) Subscribe(filters ...string) {
	c.t.Helper()
	sa, err := c.subscribe(filters)
	if err != nil {
		c.t.Fatalf("subscribe %v: %v", filters, err)
	}
	for i, r := range sa.Reasons {
		if r >= 0x80 {
			c.t.Fatalf("subscribe %s: reason %#x", filters[i], r)
		}
	}
}

// subscribe sends SUBSCRIBE for the filters with QoS 1 and waits for the
// SUBACK.
func (c *Client) subscribe(filters []string) (*paho.Suback, error) {
	s := &paho.Subscribe{}
	for _, f := range filters {
		s.Subscriptions = append(s.Subscriptions, paho.SubscribeOptions{Topic: f, QoS: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	return c.Paho.Subscribe(ctx, s)
}

// Request sends payload as a state store request with the given user
// properties and returns the response.
func (c *Client) Request(payload []byte, user ...paho.UserProperty) *paho.Publish {
	c.t.Helper()
	corr := make([]byte, 16)
	_, _ = rand.Read(corr)
	for attempt := 1; ; attempt++ {
		res := c.Await(c.SendAs(corr, payload, user...))
		if !retryUnavailable || attempt == 5 || string(res.Payload) != unavailable {
			return res
		}
		// A cluster on a machine loaded by the whole suite may hold an
		// election; the same request is sent again, as a client library
		// does, and the log applies it once.
		c.t.Logf("client %s: %q answered unavailable; sent again", c.ID, payload)
		time.Sleep(50 * time.Millisecond)
	}
}

// retryUnavailable makes Request send a request again when it is
// answered "the state store is unavailable", as a client library does:
// set by DSS_TEST_RETRY_UNAVAILABLE for tests run against a cluster.
var retryUnavailable = os.Getenv("DSS_TEST_RETRY_UNAVAILABLE") != ""

var unavailable = "-ERR " + wire.ErrUnavailable.Text() + "\r\n"

// Set sends SET with a fresh __ts and any further user properties.
func (c *Client) Set(args []string, user ...paho.UserProperty) *paho.Publish {
	c.t.Helper()
	user = append([]paho.UserProperty{{Key: wire.PropTimestamp, Value: Now()}}, user...)
	return c.Request(Cmd(append([]string{"SET"}, args...)...), user...)
}

// Send publishes a request without waiting for the response; Await takes
// the response from the returned channel.
func (c *Client) Send(payload []byte, user ...paho.UserProperty) chan *paho.Publish {
	c.t.Helper()
	corr := make([]byte, 16)
	_, _ = rand.Read(corr)
	return c.SendAs(corr, payload, user...)
}

// SendAs is Send with the given correlation data, as a client that sends
// a request again does.
func (c *Client) SendAs(corr, payload []byte, user ...paho.UserProperty) chan *paho.Publish {
	c.t.Helper()
	ch := make(chan *paho.Publish, 1)
	c.mu.Lock()
	c.waiting[string(corr)] = ch
	c.mu.Unlock()
	res, err := c.Publish(&paho.Publish{
		QoS:     1,
		Topic:   wire.RequestTopic,
		Payload: payload,
		Properties: &paho.PublishProperties{
			ResponseTopic:   c.ResponseTopic,
			CorrelationData: corr,
			User:            user,
		},
	})
	if err != nil {
		c.t.Fatalf("publish request: %v", err)
	}
	if res.ReasonCode != 0 {
		c.t.Fatalf("request acknowledged with reason code %#x", res.ReasonCode)
	}
	return ch
}

// Await waits for the response on ch.
func (c *Client) Await(ch chan *paho.Publish) *paho.Publish {
	c.t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(Timeout):
		c.t.Fatalf("client %s: no response within %v", c.ID, Timeout)
		return nil
	}
}

// Publish publishes p and returns the acknowledgement.
func (c *Client) Publish(p *paho.Publish) (*paho.PublishResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	return c.Paho.Publish(ctx, p)
}

// Next returns the next message that is not a response, failing the test
// if none arrives within Timeout.
func (c *Client) Next() *paho.Publish {
	c.t.Helper()
	select {
	case p := <-c.Messages:
		return p
	case <-time.After(Timeout):
		c.t.Fatalf("client %s: no message within %v", c.ID, Timeout)
		return nil
	}
}

// NoMessage fails the test if a message that is not a response arrives
// within d.
func (c *Client) NoMessage(d time.Duration) {
	c.t.Helper()
	select {
	case p := <-c.Messages:
		c.t.Fatalf("client %s: unexpected message on %s: %q", c.ID, p.Topic, p.Payload)
	case <-time.After(d):
	}
}

// AwaitDisconnect waits for the DISCONNECT the server sends and fails the
// test unless it comes within Timeout with the reason code want; what
// says what should have caused it.
func (c *Client) AwaitDisconnect(want byte, what string) {
	c.t.Helper()
	select {
	case d := <-c.Disconnects:
		if d.ReasonCode != want {
			c.t.Fatalf("client %s: %s: DISCONNECT with reason %#x, want %#x", c.ID, what, d.ReasonCode, want)
		}
	case <-time.After(Timeout):
		c.t.Fatalf("client %s: %s: no DISCONNECT within %v", c.ID, what, Timeout)
	}
}

// UserProperty returns the value of the user property key of p and
// whether p has it.
func UserProperty(p *paho.Publish, key string) (string, bool) {
	if p.Properties == nil {
		return "", false
	}
	for _, u := range p.Properties.User {
		if u.Key == key {
			return u.Value, true
		}
	}
	return "", false
}

// SubscribeCodes subscribes to the filters with QoS 1 and returns the
// SUBACK's reason codes, whatever they are.
func (c *Client) SubscribeCodes(filters ...string) []byte {
	c.t.Helper()
	sa, err := c.subscribe(filters)
	if sa == nil {
		c.t.Fatalf("subscribe %v: %v", filters, err)
	}
	return sa.Reasons
}

// PublishCode publishes p (QoS 1 unless set) and returns the PUBACK's
// reason code, whatever it is.
func (c *Client) PublishCode(p *paho.Publish) byte {
	c.t.Helper()
	if p.QoS == 0 {
		p.QoS = 1
	}
	res, err := c.Publish(p)
	if res == nil {
		c.t.Fatalf("publish on %s: %v", p.Topic, err)
	}
	return res.ReasonCode
}

// lockedConn is a connection whose writers paho serializes packet by
// packet.
type lockedConn struct {
	net.Conn
	sync.Mutex
}

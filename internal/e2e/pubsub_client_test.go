package e2e_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// mqttClient is a plain MQTT 5 client (paho) of the publish/subscribe
// tests: every message it receives goes to msgs, every DISCONNECT the
// server sends to disconnects.
type mqttClient struct {
	t           *testing.T
	id          string
	paho        *paho.Client
	conn        net.Conn
	connack     *paho.Connack
	msgs        chan *paho.Publish
	disconnects chan *paho.Disconnect
	closeOnce   sync.Once
	closed      atomic.Bool
}

// pubsubTimeout bounds a wait for a message or an acknowledgement.
const pubsubTimeout = 15 * time.Second

// connectMQTT connects id to addr with Clean Start and without session
// expiry unless change sets otherwise; it fails the test if the server
// refuses. The client disconnects when the test ends.
func connectMQTT(t *testing.T, addr, id string, change ...func(*paho.Connect)) *mqttClient {
	t.Helper()
	c, err := tryConnectMQTT(t, addr, id, change...)
	if err != nil {
		t.Fatalf("connect %s to %s: %v", id, addr, err)
	}
	return c
}

func tryConnectMQTT(t *testing.T, addr, id string, change ...func(*paho.Connect)) (*mqttClient, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, pubsubTimeout)
	if err != nil {
		return nil, err
	}
	c := &mqttClient{t: t, id: id, conn: conn, msgs: make(chan *paho.Publish, 1<<16), disconnects: make(chan *paho.Disconnect, 4)}
	c.paho = paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			select {
			case c.msgs <- pr.Packet:
			default:
				t.Errorf("client %s: message buffer full", id)
			}
			return true, nil
		}},
		OnServerDisconnect: func(d *paho.Disconnect) { c.disconnects <- d },
		OnClientError: func(err error) {
			if !c.closed.Load() {
				t.Logf("client %s: %v", id, err)
			}
		},
		PacketTimeout: pubsubTimeout,
	})
	cp := &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true}
	for _, f := range change {
		f(cp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pubsubTimeout)
	defer cancel()
	ca, err := c.paho.Connect(ctx, cp)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.connack = ca
	t.Cleanup(c.close)
	return c, nil
}

func (c *mqttClient) close() {
	c.closed.Store(true)
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			_ = c.paho.Disconnect(&paho.Disconnect{})
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
		}
		c.conn.Close()
	})
}

// drop closes the connection without a DISCONNECT, as a client that
// vanishes does.
func (c *mqttClient) drop() {
	c.closed.Store(true)
	c.closeOnce.Do(func() { c.conn.Close() })
}

// subscribe subscribes with the given options and returns the SUBACK's
// reason codes; id, when not 0, is the subscription identifier.
func (c *mqttClient) subscribe(id int, opts ...paho.SubscribeOptions) []byte {
	c.t.Helper()
	s := &paho.Subscribe{Subscriptions: opts}
	if id != 0 {
		s.Properties = &paho.SubscribeProperties{SubscriptionIdentifier: &id}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pubsubTimeout)
	defer cancel()
	sa, err := c.paho.Subscribe(ctx, s)
	if err != nil {
		c.t.Fatalf("%s: subscribe: %v", c.id, err)
	}
	return sa.Reasons
}

// sub subscribes to filter with QoS qos and fails the test unless it is
// granted.
func (c *mqttClient) sub(filter string, qos byte) {
	c.t.Helper()
	if r := c.subscribe(0, paho.SubscribeOptions{Topic: filter, QoS: qos}); r[0] >= 0x80 {
		c.t.Fatalf("%s: subscribe %s: reason %#x", c.id, filter, r[0])
	}
}

// pub publishes and, for QoS 1 and 2, waits for the acknowledgement,
// failing the test on an error or a reason code of failure.
func (c *mqttClient) pub(p *paho.Publish) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pubsubTimeout)
	defer cancel()
	res, err := c.paho.Publish(ctx, p)
	if err != nil {
		c.t.Fatalf("%s: publish on %s: %v", c.id, p.Topic, err)
	}
	if res != nil && res.ReasonCode >= 0x80 {
		c.t.Fatalf("%s: publish on %s: reason %#x", c.id, p.Topic, res.ReasonCode)
	}
}

// next returns the next message, failing the test if none comes.
func (c *mqttClient) next() *paho.Publish {
	c.t.Helper()
	select {
	case p := <-c.msgs:
		return p
	case <-time.After(pubsubTimeout):
		c.t.Fatalf("%s: no message within %v", c.id, pubsubTimeout)
		return nil
	}
}

// none fails the test if a message arrives within d.
func (c *mqttClient) none(d time.Duration) {
	c.t.Helper()
	select {
	case p := <-c.msgs:
		c.t.Fatalf("%s: unexpected message on %s: %q", c.id, p.Topic, p.Payload)
	case <-time.After(d):
	}
}

// awaitDisconnect waits for the server's DISCONNECT and checks its
// reason code.
func (c *mqttClient) awaitDisconnect(want byte) {
	c.t.Helper()
	select {
	case d := <-c.disconnects:
		if d.ReasonCode != want {
			c.t.Fatalf("%s: DISCONNECT %#x, want %#x", c.id, d.ReasonCode, want)
		}
	case <-time.After(pubsubTimeout):
		c.t.Fatalf("%s: no DISCONNECT within %v", c.id, pubsubTimeout)
	}
}

func persistent(expiry uint32) func(*paho.Connect) {
	return func(cp *paho.Connect) {
		cp.CleanStart = false
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &expiry}
	}
}

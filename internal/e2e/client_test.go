package e2e_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// client is a raw MQTT 5 state store client that, unlike dsstest's, turns
// a lost connection into errors instead of failing the test: the server
// is meant to die under it.
type client struct {
	id      string
	paho    *paho.Client
	topic   string
	next    atomic.Uint64
	mu      sync.Mutex
	waiting map[uint64]chan *paho.Publish
	lost    chan struct{}
	once    sync.Once
}

// errRefused reports a request the server acknowledged with a failure
// reason code: it was not executed.
var errRefused = errors.New("request refused")

// errUnanswered reports a request the server accepted (PUBACK 0x00) but
// never answered.
var errUnanswered = errors.New("request accepted but not answered")

func dial(ctx context.Context, addr, id string) (*client, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &client{id: id, topic: "clients/" + id + "/response", waiting: map[uint64]chan *paho.Publish{}, lost: make(chan struct{})}
	c.paho = paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			p := pr.Packet
			if p.Properties == nil || len(p.Properties.CorrelationData) != 8 {
				return true, nil
			}
			n := binary.BigEndian.Uint64(p.Properties.CorrelationData)
			c.mu.Lock()
			ch := c.waiting[n]
			delete(c.waiting, n)
			c.mu.Unlock()
			if ch != nil {
				ch <- p
			}
			return true, nil
		}},
		OnClientError:      func(error) { c.once.Do(func() { close(c.lost) }) },
		OnServerDisconnect: func(*paho.Disconnect) { c.once.Do(func() { close(c.lost) }) },
		PacketTimeout:      5 * time.Second,
	})
	if _, err := c.paho.Connect(ctx, &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true}); err != nil {
		return nil, err
	}
	if _, err := c.paho.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: c.topic, QoS: 1}}}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *client) close() { _ = c.paho.Disconnect(&paho.Disconnect{}) }

// reply is a parsed response.
type reply struct {
	payload string
	version string // "" when the response had no __ts
}

// do sends one request and waits for its response. It reports errRefused
// when the PUBACK refused the request, and another error when the outcome
// is unknown (the connection was lost or nothing came back).
func (c *client) do(ctx context.Context, args []string, user ...paho.UserProperty) (reply, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	n := c.next.Add(1)
	corr := binary.BigEndian.AppendUint64(nil, n)
	ch := make(chan *paho.Publish, 1)
	c.mu.Lock()
	c.waiting[n] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, n)
		c.mu.Unlock()
	}()
	res, err := c.paho.Publish(ctx, &paho.Publish{
		QoS: 1, Topic: wire.RequestTopic, Payload: resp.AppendArray(nil, b...),
		Properties: &paho.PublishProperties{ResponseTopic: c.topic, CorrelationData: corr, User: user},
	})
	if res != nil && res.ReasonCode >= 0x80 {
		return reply{}, fmt.Errorf("%w: reason %#x", errRefused, res.ReasonCode)
	}
	if err != nil {
		return reply{}, err
	}
	select {
	case p := <-ch:
		return parseReply(p), nil
	case <-c.lost:
	case <-ctx.Done():
	}
	// The response may have come just before the connection ended (the
	// server disconnects as soon as the last response is acknowledged,
	// and paho acknowledges once it handed the response over): a select
	// with both ready picks either.
	select {
	case p := <-ch:
		return parseReply(p), nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return reply{}, fmt.Errorf("%w: %w", errUnanswered, err)
	}
	return reply{}, errUnanswered
}

func parseReply(p *paho.Publish) reply {
	r := reply{payload: string(p.Payload)}
	for _, u := range p.Properties.User {
		if u.Key == wire.PropTimestamp {
			r.version = u.Value
		}
	}
	return r
}

func now() paho.UserProperty {
	return paho.UserProperty{Key: wire.PropTimestamp, Value: hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "e2e"}.String()}
}

func fence(v hlc.Timestamp) paho.UserProperty {
	return paho.UserProperty{Key: wire.PropFencingToken, Value: v.String()}
}

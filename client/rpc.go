package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/eclipse/paho.golang/paho/session"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/wire"
)

// request is one state store request on its way out.
type request struct {
	payload []byte
	fence   hlc.Timestamp // sent as __ft unless zero
	// readOnly marks a request that may be sent again when the
	// connection drops before its response arrives (GET, KEYNOTIFY).
	readOnly bool
	// stale asks a cluster node for its own copy at once (a GET).
	stale bool
	// persist asks for the key to survive a restart (a SET).
	persist bool
	// ttl asks for the time the key has left (a GET).
	ttl bool
}

// errNotSent marks a failure that happened before the request left the
// client: it is always safe to try again.
var errNotSent = errors.New("request not sent")

// Reason codes of a PUBACK after which the request was certainly not
// executed and may be sent again: the server is shutting down or busy.
const (
	codeUnspecified = 0x80
	codeServerBusy  = 0x89
)

// Waits between attempts of a request that may be retried.
const (
	minRetryWait = 10 * time.Millisecond
	maxRetryWait = 500 * time.Millisecond
)

// call sends r and returns its response. It waits for a connection when
// there is none, and sends the request again (on the same or the next
// connection) whenever that is safe: the request was not sent, was refused
// unexecuted, was answered "unavailable" or "busy", or only reads and its connection
// dropped. It gives up when ctx ends.
func (c *Client) call(ctx context.Context, r *request) (response, error) {
	wait := minRetryWait
	// Every attempt carries the same correlation data: a dss cluster
	// recognises a write it has already applied by it (and the client
	// id), so a write resent after a failover is not applied twice.
	corr := newCorrelation()
	for {
		cn, err := c.awaitConn(ctx)
		if err != nil {
			return response{}, err
		}
		res, err := c.roundTrip(ctx, cn, r, corr)
		if err == nil || !c.retryable(r, err) {
			return res, err
		}
		if errors.Is(err, ErrUnavailable) && len(c.cfg.Servers) > 1 {
			// This server refuses everything (it is closing, or its
			// storage failed): fail over rather than wait for it.
			c.log.Info("server unavailable; failing over", "server", cn.addr)
			cn.cancel()
		}
		c.log.Debug("retrying request", "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return response{}, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-c.ctx.Done():
			return response{}, ErrClosed
		}
		wait = min(2*wait, maxRetryWait)
	}
}

func (c *Client) retryable(r *request, err error) bool {
	var refused *RefusedError
	switch {
	case isClosed(err):
		return false
	case errors.Is(err, errNotSent), errors.Is(err, ErrUnavailable), errors.Is(err, ErrBusy):
		return true
	case errors.As(err, &refused):
		return refused.ReasonCode == codeUnspecified || refused.ReasonCode == codeServerBusy
	case errors.Is(err, ErrConnectionLost):
		return r.readOnly
	}
	return false
}

// roundTrip sends r on cn once and waits for the response.
func (c *Client) roundTrip(ctx context.Context, cn *conn, r *request, corr []byte) (response, error) {
	ch := make(chan *paho.Publish, 1)
	c.mu.Lock()
	c.calls[string(corr)] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, string(corr))
		c.mu.Unlock()
	}()

	// The request ends with the connection: its response can only come
	// on the connection it was sent on.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(cn.ctx, cancel)()

	if cn.ctx.Err() != nil {
		return response{}, errNotSent
	}
	pub := c.envelope(ctx, r, corr)
	// A request over the server's limit is not sent: the server would end
	// the connection (DISCONNECT 0x95), and a write would come back
	// "connection lost", as if it might have been applied. The envelope's
	// other fields are a few hundred bytes: only a payload near the limit
	// needs the exact size.
	if limit := int(cn.maxPacket); limit > 0 && len(pub.Payload)+2*len(c.respTopic)+4096 > limit {
		if n := publishSize(pub); n > limit {
			return response{}, &PacketTooLargeError{Size: n, Max: limit}
		}
	}
	pr, err := cn.pc.Publish(rctx, pub)
	switch {
	case pr != nil && pr.ReasonCode >= 0x80:
		e := &RefusedError{ReasonCode: pr.ReasonCode}
		if pr.Properties != nil {
			e.Reason = pr.Properties.ReasonString
		}
		return response{}, e
	case errors.Is(err, session.ErrNoConnection):
		return response{}, fmt.Errorf("%w: %w", errNotSent, err)
	case err != nil:
		return response{}, c.interrupted(ctx, cn, err)
	}

	select {
	case p := <-ch:
		return c.decode(p)
	case <-rctx.Done():
		select {
		case p := <-ch: // the response won the race against the loss
			return c.decode(p)
		default:
		}
		return response{}, c.interrupted(ctx, cn, nil)
	}
}

// interrupted explains why a request that was (perhaps) sent got no
// response.
func (c *Client) interrupted(ctx context.Context, cn *conn, err error) error {
	switch {
	case c.ctx.Err() != nil:
		return ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	case cn.ctx.Err() != nil:
		return ErrConnectionLost
	}
	return err
}

// envelope wraps a request payload in the RPC envelope of PROTOCOL.md
// section 2.
func (c *Client) envelope(ctx context.Context, r *request, corr []byte) *paho.Publish {
	user := []paho.UserProperty{
		{Key: wire.PropSourceID, Value: c.cfg.ClientID},
		{Key: wire.PropTimestamp, Value: c.clock.Now().String()},
		{Key: wire.PropProtocolVersion, Value: wire.ProtocolVersion},
	}
	if !r.fence.IsZero() {
		user = append(user, paho.UserProperty{Key: wire.PropFencingToken, Value: r.fence.String()})
	}
	if r.stale {
		user = append(user, paho.UserProperty{Key: wire.PropConsistency, Value: wire.ConsistencyStale})
	}
	if r.persist {
		user = append(user, paho.UserProperty{Key: wire.PropPersistence, Value: "true"})
	}
	if r.ttl {
		user = append(user, paho.UserProperty{Key: wire.PropTTL, Value: "true"})
	}
	props := &paho.PublishProperties{
		ContentType:     wire.ContentType,
		ResponseTopic:   c.respTopic,
		CorrelationData: corr,
		User:            user,
	}
	if d, ok := ctx.Deadline(); ok {
		// A request nobody waits for any more need not be delivered.
		secs := math.Ceil(time.Until(d).Seconds())
		if secs >= 1 && secs <= math.MaxUint32 {
			exp := uint32(secs)
			props.MessageExpiry = &exp
		}
	}
	return &paho.Publish{QoS: 1, Topic: wire.RequestTopic, Payload: r.payload, Properties: props}
}

// publishSize is the size of p's PUBLISH packet on the wire.
func publishSize(p *paho.Publish) int {
	n := 0
	for _, b := range p.Packet().Buffers() {
		n += len(b)
	}
	// The fixed header: one byte, and the remaining length in 1 to 4.
	switch {
	case n < 128:
		return n + 2
	case n < 16384:
		return n + 3
	case n < 2097152:
		return n + 4
	}
	return n + 5
}

// newCorrelation returns random correlation data in the form of a version
// 4 UUID, as the vendor's clients send.
func newCorrelation() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}

// received is paho's handler for every PUBLISH: responses go to the call
// waiting for them, notifications to the watches. It runs on paho's
// goroutine and never blocks.
func (c *Client) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	switch {
	case p.Topic == c.respTopic:
		var corr string
		if p.Properties != nil {
			corr = string(p.Properties.CorrelationData)
		}
		c.mu.Lock()
		ch, ok := c.calls[corr]
		delete(c.calls, corr)
		c.mu.Unlock()
		if !ok {
			// Late (its caller gave up) or not ours: nothing waits for it.
			c.log.Debug("response without a waiting request", "correlation", fmt.Sprintf("%x", corr))
			return true, nil
		}
		ch <- p // buffered, and delivered at most once
	case len(p.Topic) > len(c.notifyPrefix) && p.Topic[:len(c.notifyPrefix)] == c.notifyPrefix:
		c.notified(p)
	}
	return true, nil
}

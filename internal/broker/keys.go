package broker

import (
	"context"
	"errors"
	"slices"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// KeyLister lists keys for dss's extension KEYS; *engine.Node is one. A
// Store that is not one answers KEYS "unknown command".
type KeyLister interface {
	Keys(ctx context.Context, q engine.KeysQuery) ([]string, error)
}

// maxListings bounds the KEYS requests served at once: each reads the
// whole keyspace. Beyond, KEYS is answered "busy".
const maxListings = 2

// listKeys answers a KEYS request on a goroutine of its own: the listing
// reads every key, and the caller is a connection's reader that may serve
// many connections. The response may overtake the responses to the
// client's earlier requests; each carries its own correlation data.
func (b *Broker) listKeys(c *call) {
	req := &c.op.Request
	kl, ok := b.store.(KeyLister)
	if !ok {
		b.answerNow(c, wire.ErrUnknownCommand)
		return
	}
	select {
	case b.listingSlots <- struct{}{}:
	default:
		b.answerNow(c, wire.ErrBusy)
		return
	}
	// The request aliases the connection's read buffer, which the next
	// packet reuses.
	pattern := slices.Clone(req.Key)
	match := func(key string) bool { return wire.MatchGlob(pattern, key) }
	if a := accessOf(c.client); a != nil {
		// Under a policy, only the keys the client may read.
		if mayRead := a.readable(); mayRead != nil {
			match = func(key string) bool { return wire.MatchGlob(pattern, key) && mayRead(key) }
		}
	}
	q := engine.KeysQuery{
		Match:    match,
		After:    string(req.After),
		HasAfter: req.HasAfter,
		Limit:    req.Limit,
		MaxBytes: wire.KeysReplyBytes,
	}
	c.op.Request = wire.Request{Verb: wire.VerbKeys}
	b.listings.Add(1)
	go func() {
		defer b.listings.Done()
		defer func() { <-b.listingSlots }()
		keys, err := kl.Keys(b.ctx, q)
		if err != nil {
			var werr *wire.Error
			if !errors.As(err, &werr) {
				werr = wire.ErrUnavailable
			}
			c.op.Result.Err = werr
			b.complete(&c.op)
			return
		}
		size := 16
		for _, k := range keys {
			size += len(k) + 16
		}
		payload := resp.AppendArrayHeader(make([]byte, 0, size), len(keys))
		for _, k := range keys {
			payload = resp.AppendBulkString(payload, k)
		}
		b.respond(c, payload, okNoVersion, false)
		c.release()
	}()
}

// answerNow answers c with a protocol error on the reader's goroutine.
func (b *Broker) answerNow(c *call, err *wire.Error) {
	c.op.Result.Err = err
	c.op.Inline = true
	b.complete(&c.op)
}

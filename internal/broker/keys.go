package broker

import (
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// listKeys answers a KEYS request on a goroutine of its own: the listing
// reads every key, and the caller is a connection's reader that may serve
// many connections. The response may overtake the responses to the
// client's earlier requests; each carries its own correlation data.
func (b *Broker) listKeys(c *call) {
	req := &c.op.Request
	kl, ok := b.store.(service.KeyLister)
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
	// Under a policy, only the keys the client may read.
	var mayRead func(string) bool
	if a := accessOf(c.client); a != nil {
		mayRead = a.readable()
	}
	q := service.KeysQuery(req, mayRead)
	c.op.Request = wire.Request{Verb: wire.VerbKeys}
	b.listings.Add(1)
	go func() {
		defer b.listings.Done()
		defer func() { <-b.listingSlots }()
		payload, err := service.ListKeys(b.ctx, kl, q)
		if err != nil {
			c.op.Result.Err = err
			b.complete(&c.op)
			return
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

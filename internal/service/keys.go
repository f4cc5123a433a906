package service

import (
	"context"
	"errors"
	"slices"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// KeyLister lists keys for dss's extension KEYS; *engine.Node is one. A
// store that is not one answers KEYS "unknown command".
type KeyLister interface {
	Keys(ctx context.Context, q engine.KeysQuery) ([]string, error)
}

// MaxListings bounds the KEYS requests a front end serves at once: each
// reads the whole keyspace. Beyond, KEYS is answered "busy".
const MaxListings = 2

// KeysQuery returns the query of a KEYS request. mayRead, when not nil,
// leaves out the keys the requester may not read. The query keeps a copy
// of what it needs of req, which may alias a connection's read buffer.
func KeysQuery(req *wire.Request, mayRead func(key string) bool) engine.KeysQuery {
	pattern := slices.Clone(req.Key)
	match := func(key string) bool { return wire.MatchGlob(pattern, key) }
	if mayRead != nil {
		match = func(key string) bool { return wire.MatchGlob(pattern, key) && mayRead(key) }
	}
	return engine.KeysQuery{
		Match:    match,
		After:    string(req.After),
		HasAfter: req.HasAfter,
		Limit:    req.Limit,
		MaxBytes: wire.KeysReplyBytes,
	}
}

// ListKeys carries out a KEYS query and returns the response's payload,
// or the protocol error that answers it instead. It reads every key: the
// caller runs it on a goroutine of its own.
func ListKeys(ctx context.Context, kl KeyLister, q engine.KeysQuery) ([]byte, *wire.Error) {
	keys, err := kl.Keys(ctx, q)
	if err != nil {
		var werr *wire.Error
		if !errors.As(err, &werr) {
			werr = wire.ErrUnavailable
		}
		return nil, werr
	}
	size := 16
	for _, k := range keys {
		size += len(k) + 16
	}
	payload := resp.AppendArrayHeader(make([]byte, 0, size), len(keys))
	for _, k := range keys {
		payload = resp.AppendBulkString(payload, k)
	}
	return payload, nil
}

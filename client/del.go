package client

import (
	"context"
	"fmt"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
)

// DelResult is the outcome of a Del or VDel.
type DelResult struct {
	// Deleted reports whether the key was deleted.
	Deleted bool
	// Mismatch reports, for VDel, that the key exists with another value
	// and was left alone.
	Mismatch bool
	// Version is the version of the deleted value, when the server
	// reports one.
	Version hlc.Timestamp
}

// Del deletes key. A missing key is not an error: the result says Deleted
// false. Pass a FencingToken for a protected key.
func (c *Client) Del(ctx context.Context, key string, opts ...DelOption) (DelResult, error) {
	r, err := c.del(ctx, [][]byte{[]byte("DEL"), []byte(key)}, opts)
	if err != nil {
		return DelResult{}, fmt.Errorf("del %q: %w", key, err)
	}
	return r, nil
}

// VDel deletes key only if it holds value (compare and delete). A missing
// key or another value is not an error: the result says Deleted false, and
// Mismatch true for another value.
func (c *Client) VDel(ctx context.Context, key string, value []byte, opts ...DelOption) (DelResult, error) {
	r, err := c.del(ctx, [][]byte{[]byte("VDEL"), []byte(key), value}, opts)
	if err != nil {
		return DelResult{}, fmt.Errorf("vdel %q: %w", key, err)
	}
	return r, nil
}

func (c *Client) del(ctx context.Context, args [][]byte, opts []DelOption) (DelResult, error) {
	var o delOptions
	for _, opt := range opts {
		opt.applyDel(&o)
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, args...), fence: o.fence})
	if err != nil {
		return DelResult{}, err
	}
	return delResult(res)
}

func delResult(res response) (DelResult, error) {
	r := res.reply
	if r.Kind != resp.KindInteger {
		return DelResult{}, unexpected(r)
	}
	switch {
	case r.Int > 0:
		return DelResult{Deleted: true, Version: res.version}, nil
	case r.Int == -1:
		return DelResult{Mismatch: true, Version: res.version}, nil
	case r.Int == 0:
		return DelResult{}, nil
	}
	return DelResult{}, unexpected(r)
}

package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
)

// SetResult is the outcome of a Set.
type SetResult struct {
	// Applied reports whether the value was stored; false means the
	// Condition was not met.
	Applied bool
	// Version is the key's new version when applied, and the version
	// currently stored when not. It is the fencing token of a lock taken
	// with this Set.
	Version hlc.Timestamp
}

// Set stores value under key. Options: IfMissing or IfMissingOrEqual to
// make it conditional, TTL to make the key expire, FencingToken for a
// protected key, Persist for a key that must survive a restart. A condition that is not met is not an error: the result
// says Applied false.
func (c *Client) Set(ctx context.Context, key string, value []byte, opts ...SetOption) (SetResult, error) {
	var o setOptions
	for _, opt := range opts {
		opt.applySet(&o)
	}
	if o.ttl < 0 {
		return SetResult{}, fmt.Errorf("set %q: negative TTL %v", key, o.ttl)
	}
	args := [][]byte{[]byte("SET"), []byte(key), value}
	if o.cond != Always {
		args = append(args, []byte(o.cond.String()))
	}
	if o.ttl > 0 {
		ms := (o.ttl + time.Millisecond - 1) / time.Millisecond
		args = append(args, []byte("PX"), strconv.AppendInt(nil, int64(ms), 10))
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, args...), fence: o.fence, persist: o.persist})
	if err == nil {
		var r SetResult
		r, err = setResult(res)
		if err == nil {
			return r, nil
		}
	}
	return SetResult{}, fmt.Errorf("set %q: %w", key, err)
}

func setResult(res response) (SetResult, error) {
	r := res.reply
	switch {
	case r.Kind == resp.KindSimple && string(r.Text) == "OK":
		if !res.hasVersion {
			// The version is the point of a SET (a lock's fencing
			// token); a server that omits it breaks the protocol.
			return SetResult{}, fmt.Errorf("%w: applied SET without a version", ErrBadResponse)
		}
		return SetResult{Applied: true, Version: res.version}, nil
	case r.Kind == resp.KindInteger && r.Int <= 0, r.Kind == resp.KindNull:
		// ":-1" per the protocol; ":0" and "$-1" from older servers.
		return SetResult{Version: res.version}, nil
	}
	return SetResult{}, unexpected(r)
}

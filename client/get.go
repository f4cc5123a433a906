package client

import (
	"context"
	"fmt"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
)

// Entry is a stored value and its version.
type Entry struct {
	Value   []byte
	Version hlc.Timestamp
	// TTL is the time the key had left when the server read it, rounded
	// to milliseconds; 0 when it does not expire (or the server does not
	// say: only dss reports it, with the user property dss-ttl).
	TTL time.Duration
}

// Get returns the value and version of key. found is false when the key
// does not exist (or has expired); that is not an error. A Get is
// linearizable (on a cluster, it sees every write acknowledged before it
// was sent) unless it is given StaleRead.
func (c *Client) Get(ctx context.Context, key string, opts ...GetOption) (e Entry, found bool, err error) {
	var o getOptions
	for _, opt := range opts {
		opt.applyGet(&o)
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, []byte("GET"), []byte(key)), readOnly: true, stale: o.stale, ttl: true})
	if err == nil {
		e, found, err = getResult(res)
		if err == nil {
			return e, found, nil
		}
	}
	return Entry{}, false, fmt.Errorf("get %q: %w", key, err)
}

func getResult(res response) (Entry, bool, error) {
	r := res.reply
	switch {
	case r.Kind == resp.KindBulk:
		return Entry{Value: r.Text, Version: res.version, TTL: res.ttl}, true, nil
	case r.Kind == resp.KindNull, r.Kind == resp.KindInteger && r.Int == -1:
		// "$-1"; ":-1" is the null of the vendor's .NET client.
		return Entry{}, false, nil
	}
	return Entry{}, false, unexpected(r)
}

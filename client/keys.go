package client

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/dssio/dss/internal/resp"
)

// KeysPage returns one page of the keys that match the glob pattern, in
// byte order: the first keys greater than after (all keys when after is
// ""), at most limit of them (0 means the server's default, 1,000; the
// most is 10,000), fewer when they exceed the server's reply size. An
// empty page means there are no more. KEYS is dss's own extension of the
// protocol (docs/protocol.md): the vendor's service does not know it.
//
// Patterns are Redis's: '*' any run of bytes, '?' one byte, '[a-z]' and
// '[^a]' classes, '\' to take the next byte literally.
func (c *Client) KeysPage(ctx context.Context, pattern, after string, limit int) ([]string, error) {
	args := [][]byte{[]byte("KEYS"), []byte(pattern)}
	if after != "" {
		args = append(args, []byte("AFTER"), []byte(after))
	}
	if limit > 0 {
		args = append(args, []byte("LIMIT"), []byte(strconv.Itoa(limit)))
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, args...), readOnly: true})
	if err != nil {
		return nil, fmt.Errorf("keys %q: %w", pattern, err)
	}
	if res.reply.Kind != resp.KindArray {
		return nil, fmt.Errorf("keys %q: %w", pattern, unexpected(res.reply))
	}
	keys := make([]string, len(res.reply.Elems))
	for i, e := range res.reply.Elems {
		keys[i] = string(e)
	}
	return keys, nil
}

// Keys yields every key that matches the glob pattern, in byte order, a
// page at a time (see KeysPage). A key created or deleted while the
// listing runs may or may not be yielded. The error, if any, ends the
// sequence.
func (c *Client) Keys(ctx context.Context, pattern string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		after := ""
		for {
			page, err := c.KeysPage(ctx, pattern, after, 0)
			if err != nil {
				yield("", err)
				return
			}
			if len(page) == 0 {
				return
			}
			for _, k := range page {
				if !yield(k, nil) {
					return
				}
			}
			after = page[len(page)-1]
		}
	}
}

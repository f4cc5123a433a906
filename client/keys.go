package client

import (
	"context"
	"fmt"
	"iter"

	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// ScanPage returns one page of the keys that match pattern, as SCAN
// answers it (docs/protocol.md): the first page when token is nil, else
// the page the token of the previous one points to. next is the token of
// the page after, nil after the last page. A page may be empty while
// another follows. The token is opaque; it is valid on any node of the
// same cluster, and is refused (ErrBadScanToken's text) by a server that
// restarted or is not of the same cluster.
//
// Patterns are matched against the whole key as UTF-8 text: '*' any run
// of characters, '?' one character, '[abc]', '[a-z]' and '[!a-z]' one
// character of a set, a wildcard in a set literal ('[*]'). A key that is
// not valid UTF-8 is never listed.
func (c *Client) ScanPage(ctx context.Context, pattern string, token []byte) (keys []string, next []byte, err error) {
	args := [][]byte{[]byte("SCAN"), []byte(pattern)}
	if token != nil {
		args = append(args, token)
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, args...), readOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("scan %q: %w", pattern, err)
	}
	if res.reply.Kind != resp.KindScanPage {
		return nil, nil, fmt.Errorf("scan %q: %w", pattern, unexpected(res.reply))
	}
	keys = make([]string, len(res.reply.Elems))
	for i, e := range res.reply.Elems {
		keys[i] = string(e)
	}
	if res.reply.More {
		next = append([]byte{}, res.reply.Text...)
	}
	return keys, next, nil
}

// Keys yields every key that matches pattern (see ScanPage), in no
// particular order, a page at a time. A key present for the whole listing
// is yielded once; one created, deleted or expiring meanwhile may or may
// not be. The error, if any, ends the sequence.
func (c *Client) Keys(ctx context.Context, pattern string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		var token []byte
		for {
			page, next, err := c.ScanPage(ctx, pattern, token)
			if err != nil {
				yield("", err)
				return
			}
			for _, k := range page {
				if !yield(k, nil) {
					return
				}
			}
			if next == nil {
				return
			}
			token = next
		}
	}
}

// ErrBadScanToken: the server did not make the SCAN token it was given,
// or was restarted, or is not of the cluster that made it. Start the scan
// again without a token.
var ErrBadScanToken = serverError(wire.ErrBadScanToken)

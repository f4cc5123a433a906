package service

import (
	"context"

	"github.com/dssio/dss/internal/engine"
)

// Store carries out state store requests; *engine.Node and *cluster.Node
// are ones.
type Store interface {
	// Submit carries out op and calls op.Done once the result may be
	// sent. It reports whether Done was called before it returned, on the
	// caller's goroutine. It never blocks: the caller is a connection's
	// reader, often a read loop that serves many connections. A store
	// that cannot take op now answers it with an error (busy,
	// unavailable) instead of waiting.
	Submit(ctx context.Context, op *engine.Op) (inline bool)
}

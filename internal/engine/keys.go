package engine

import (
	"container/heap"
	"context"
	"fmt"
	"iter"
	"sort"
)

// KeysQuery is what a key listing asks for.
type KeysQuery struct {
	// Match selects the keys to list.
	Match func(key string) bool
	// After, when HasAfter is set, lists only keys greater than it (byte
	// order): the last key of the previous page.
	After    string
	HasAfter bool
	// Limit bounds the number of keys; MaxBytes their total length (the
	// first key is listed whatever its length).
	Limit    int
	MaxBytes int
}

// Keys lists the live keys that q selects, in byte order: the first
// q.Limit of them after q.After, fewer when they pass q.MaxBytes. It reads
// the whole keyspace, in steps of snapshotChunk keys under the lock as a
// snapshot does, so requests hardly notice it; a key changed meanwhile is
// listed as its step found it, and one created meanwhile may be missed.
// It runs on the caller's goroutine, which must not be one that reads
// requests: a listing of millions of keys takes a while.
func (n *Node) Keys(ctx context.Context, q KeysQuery) ([]string, error) {
	n.mu.Lock()
	if n.closing || n.failed != nil {
		n.mu.Unlock()
		return nil, errUnavailable
	}
	now := max(n.clock.PhysicalNow(), n.lastTime)
	next, stop := iter.Pull(n.m.Entries())
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		stop()
		n.mu.Unlock()
	}()

	best := &maxHeap{}
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("engine: keys: %w", err)
		}
		n.mu.Lock()
		for i := 0; i < snapshotChunk; i++ {
			c, ok := next()
			if !ok {
				done = true
				break
			}
			switch {
			case c.ExpiresAt != 0 && c.ExpiresAt <= now:
			case q.HasAfter && c.Key <= q.After:
			case best.Len() == q.Limit && c.Key >= (*best)[0]:
			case !q.Match(c.Key):
			default:
				heap.Push(best, c.Key)
				if best.Len() > q.Limit {
					heap.Pop(best)
				}
			}
		}
		n.mu.Unlock()
	}
	keys := []string(*best)
	sort.Strings(keys)
	size := 0
	for i, k := range keys {
		size += len(k)
		if size > q.MaxBytes && i > 0 {
			return keys[:i], nil
		}
	}
	return keys, nil
}

// maxHeap keeps the greatest of the keys chosen so far on top, to be
// dropped when a smaller one comes.
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

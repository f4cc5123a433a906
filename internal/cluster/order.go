package cluster

import "sync"

// writeOrder holds a client's read back while a write the client sent
// earlier through this node is under way (not yet answered, or not yet
// applied by this node), so that the read sees the write, as on a single
// node. Pipelined requests of one
// client are so carried out in the order they came; the reads of other
// clients do not wait.
type writeOrder struct {
	mu       sync.Mutex
	byClient map[string]*clientWrites // guarded by mu; clients with writes under way
}

type clientWrites struct {
	pending int
	reads   []func() // run once pending is back to zero
}

func newWriteOrder() *writeOrder {
	return &writeOrder{byClient: make(map[string]*clientWrites)}
}

// begin counts a write of client that is under way.
func (o *writeOrder) begin(client string) {
	if client == "" {
		return
	}
	o.mu.Lock()
	cw := o.byClient[client]
	if cw == nil {
		cw = &clientWrites{}
		o.byClient[client] = cw
	}
	cw.pending++
	o.mu.Unlock()
}

// end counts a write of client as answered, and starts the client's
// reads that waited for it when it was the last.
func (o *writeOrder) end(client string) {
	if client == "" {
		return
	}
	o.mu.Lock()
	cw := o.byClient[client]
	if cw == nil {
		o.mu.Unlock()
		return
	}
	cw.pending--
	var reads []func()
	if cw.pending <= 0 {
		reads = cw.reads
		delete(o.byClient, client)
	}
	o.mu.Unlock()
	for _, read := range reads {
		read()
	}
}

// after runs read once every write of client under way now is answered:
// later, and it reports true, or at once if there is none (false, and
// read did not run).
func (o *writeOrder) after(client string, read func()) bool {
	if client == "" {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	cw := o.byClient[client]
	if cw == nil {
		return false
	}
	cw.reads = append(cw.reads, read)
	return true
}

// pending reports whether a write of client is under way.
func (o *writeOrder) pending(client string) bool {
	if client == "" {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byClient[client] != nil
}

package cluster

// service is the RPC service of the cluster listener: read indexes,
// membership and status. Forwarded writes have a stream of their own
// (forward.go).
type service struct{ n *Node }

// ReadIndexArgs asks the leader for a read index.
type ReadIndexArgs struct{}

// ReadIndex returns an index that a read started now may be served at on
// any node whose machine has applied it: the leader's commit index,
// confirmed by a majority.
func (s *service) ReadIndex(_ *ReadIndexArgs, index *uint64) error {
	ch := make(chan readIndexResult, 1)
	s.n.reads.confirm(func(i uint64, err error) { ch <- readIndexResult{i, err} })
	select {
	case r := <-ch:
		*index = r.index
		return r.err
	case <-s.n.stop:
		return errClosed
	}
}

type readIndexResult struct {
	index uint64
	err   error
}

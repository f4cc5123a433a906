package engine

// Stats is what the node's machine holds, for the metrics.
type Stats struct {
	// Keys counts the stored keys, including expired ones that no expiry
	// removed yet.
	Keys int
	// Bytes is the total length of the stored keys and values.
	Bytes int64
}

// Stats returns what the node's machine holds now.
func (n *Node) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Stats{Keys: n.m.Len(), Bytes: n.m.DataBytes()}
}

package cluster

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/dssio/dss/internal/store"
)

// HashKey returns the key under which the cluster's machines hash their
// keys (store.NewKeyed): the same on every node and across restarts, so
// that a SCAN begun on one node continues on any other, and derived from
// the cluster secret, so that clients cannot compute it. A cluster
// without a secret (its listener on loopback only) hashes under a key
// anyone can compute.
func (c *Config) HashKey() store.HashKey {
	mac := hmac.New(sha256.New, c.Secret)
	mac.Write([]byte("dss store hash key v1"))
	var k store.HashKey
	copy(k[:], mac.Sum(nil))
	return k
}

// HashKey returns the key of the node's cluster (Config.HashKey).
func (n *Node) HashKey() store.HashKey { return n.cfg.HashKey() }

package store

import (
	"crypto/rand"
	"unsafe"

	"github.com/dchest/siphash"
)

// HashKey is the secret key of the hash that places keys in the index.
// The hash decides the order in which a scan lists keys (Machine.Scan), so
// the nodes of a cluster, which must continue each other's scans, use the
// same key; keeping it secret keeps clients from choosing keys that pile
// up in one place of the index.
type HashKey [16]byte

// RandomHashKey returns a new random key.
func RandomHashKey() HashKey {
	var k HashKey
	_, _ = rand.Read(k[:]) // crypto/rand.Read never fails
	return k
}

// keyedHash is SipHash-2-4 under a HashKey: a keyed hash made for hash
// tables that meet keys chosen by their users.
type keyedHash struct{ k0, k1 uint64 }

func newKeyedHash(k HashKey) keyedHash {
	return keyedHash{k0: le64(string(k[:]), 0), k1: le64(string(k[:]), 8)}
}

// sum returns the hash of key, never 0: its lowest bit is set, so that 0
// marks a free slot of the index.
func (h keyedHash) sum(key []byte) uint64 { return siphash.Hash(h.k0, h.k1, key) | 1 }

func (h keyedHash) sumString(key string) uint64 {
	return h.sum(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// id returns a number that tells keys apart without telling anything of
// them: a scan position made under one key means nothing under another.
func (h keyedHash) id() uint32 {
	return uint32(siphash.Hash(h.k0, h.k1, []byte("dss scan position")) >> 32)
}

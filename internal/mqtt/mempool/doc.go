// Package mempool pools the byte buffers the broker core encodes packets
// into, reused from one write to the next.
package mempool

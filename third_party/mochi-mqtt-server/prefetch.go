// SPDX-License-Identifier: MIT

package mqtt

import (
	"net"
	"unsafe"
)

// dss: with thousands of busy connections, the memory a request touches
// that is the connection's own (its Client, inflight store, socket and
// the embedding application's attachment) is out of the CPU's cache, and
// each structure is reached through a pointer in the one before: a turn
// of a read loop waited for a dozen memory reads one after another. A
// loop that has several connections ready asks for the memory of the
// ones a few turns ahead, one step of the chain per turn, so that it
// arrives while the turns before them run (prefetch never faults and
// never waits: the addresses below are hints, and memory the layout of
// which changed would only be fetched in vain).

// prefetchClient fetches the Client itself (14 cache lines).
func (cl *Client) prefetchClient() {
	p := uintptr(unsafe.Pointer(cl))
	for off := uintptr(0); off < unsafe.Sizeof(*cl); off += 64 {
		prefetch(p + off)
	}
}

// prefetchReferents fetches what the Client points to: its inflight
// store, its connection and the attachment. The Client should be in the
// cache already.
func (cl *Client) prefetchReferents() {
	prefetch(uintptr(unsafe.Pointer(cl.State.Inflight)))
	if tc, ok := cl.Net.Conn.(*net.TCPConn); ok {
		prefetch(uintptr(unsafe.Pointer(tc)))
	}
	if v := cl.Attached.Load(); v != nil {
		prefetch(uintptr(dataOf(v)))
	}
}

// prefetchSocket fetches the socket's descriptor structure (its locks,
// its number), which a TCP connection's one field points to. The
// connection should be in the cache already.
func (cl *Client) prefetchSocket() {
	if tc, ok := cl.Net.Conn.(*net.TCPConn); ok {
		prefetch(*(*uintptr)(unsafe.Pointer(tc)))
	}
	if inf := cl.State.Inflight; inf != nil {
		prefetch(uintptr(inf.internalMap()))
		if pk := inf.recent.Load(); pk != nil {
			// Filled again by the next delivery (13 lines, written).
			p := uintptr(unsafe.Pointer(pk))
			for off := uintptr(0); off < unsafe.Sizeof(*pk); off += 64 {
				prefetch(p + off)
			}
		}
	}
}

// internalMap is the inflight map's header. It does not read the map.
func (i *Inflight) internalMap() unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&i.internal))
}

// dataOf returns the data word of an interface value: for a pointer, the
// pointer.
func dataOf(v any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
}

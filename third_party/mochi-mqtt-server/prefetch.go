// SPDX-License-Identifier: MIT

package mqtt

import (
	"net"
	"reflect"
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
// which changed would only be fetched in vain). The pointers followed
// may be changing under another goroutine's lock, as hints may: the
// functions that read them are not instrumented by the race detector
// (go:norace).

// prefetchClient fetches the Client itself (14 cache lines).
func (cl *Client) prefetchClient() {
	prefetch(uintptr(unsafe.Pointer(cl)), unsafe.Sizeof(*cl))
}

// prefetchReferents fetches what the Client points to: its inflight
// store, its connection and the first two lines of the attachment. The
// Client should be in the cache already.
//
//go:norace
func (cl *Client) prefetchReferents() {
	prefetch(uintptr(unsafe.Pointer(cl.State.Inflight)), 1)
	if tc, ok := cl.Net.Conn.(*net.TCPConn); ok {
		prefetch(uintptr(unsafe.Pointer(tc)), 1)
	}
	if v := cl.Attached.Load(); v != nil {
		prefetch(uintptr(dataOf(v)), 128)
	}
}

// prefetchSocket fetches the socket's descriptor structure (its locks,
// its number), which a TCP connection's one field points to. The
// connection should be in the cache already.
//
//go:norace
func (cl *Client) prefetchSocket() {
	if fd := cl.netFD(); fd != nil {
		prefetch(uintptr(fd), 1)
	}
	if inf := cl.State.Inflight; inf != nil {
		prefetch(uintptr(inf.internalMap()), 1)
		if pk := inf.recent.Load(); pk != nil {
			// Filled again by the next delivery (13 lines, written).
			prefetch(uintptr(unsafe.Pointer(pk)), unsafe.Sizeof(*pk))
		}
	}
}

// prefetchLeaves fetches the ends of the chains, which the turn reads
// first thing: the runtime's poll descriptor of the socket (every read
// and write checks it), the slots of the inflight map (a map of up to
// eight entries keeps them in one group, which its header points to),
// and the first ownerBytes of the owner of the packet in flight, which
// its acknowledgement releases and the next delivery fills again. The
// socket's descriptor structure, the inflight store, its map's header
// and the packet should be in the cache already.
//
//go:norace
func (cl *Client) prefetchLeaves() {
	if fd := cl.netFD(); fd != nil && pollDescOffset >= 0 {
		prefetch(*(*uintptr)(unsafe.Add(fd, pollDescOffset)), 1)
	}
	inf := cl.State.Inflight
	if inf == nil {
		return
	}
	if m := (*mapHeader)(inf.internalMap()); m != nil && m.dirLen == 0 {
		prefetch(uintptr(m.dirPtr), smallGroupBytes)
	}
	if pk := inf.recent.Load(); pk != nil && pk.Owner != nil {
		prefetch(uintptr(dataOf(pk.Owner)), ownerBytes)
	}
}

// netFD is the socket's descriptor structure (net.netFD), the one word
// of a TCP connection; nil for other connections. It does not read the
// structure.
//
//go:norace
func (cl *Client) netFD() unsafe.Pointer {
	if tc, ok := cl.Net.Conn.(*net.TCPConn); ok {
		return *(*unsafe.Pointer)(unsafe.Pointer(tc))
	}
	return nil
}

// pollDescOffset is where, in the socket's descriptor structure
// (net.netFD), the pointer to the runtime's poll descriptor is
// (poll.FD's pd.runtimeCtx), or -1 if this Go's structures do not have
// it: found by reflection, so that a change of layout turns the prefetch
// off rather than have it fetch the wrong memory.
var pollDescOffset = findPollDescOffset()

func findPollDescOffset() int {
	// A TCPConn's first word is its netFD: netFD relies on it.
	conn, ok := reflect.TypeOf(net.TCPConn{}).FieldByName("conn")
	if !ok || conn.Offset != 0 || conn.Type.Kind() != reflect.Struct {
		return -1
	}
	fd, ok := conn.Type.FieldByName("fd")
	if !ok || fd.Offset != 0 || fd.Type.Kind() != reflect.Pointer {
		return -1
	}
	off := uintptr(0)
	t := fd.Type.Elem()
	for _, name := range []string{"pfd", "pd", "runtimeCtx"} {
		if t.Kind() != reflect.Struct {
			return -1
		}
		f, ok := t.FieldByName(name)
		if !ok {
			return -1
		}
		off += f.Offset
		t = f.Type
	}
	if t.Kind() != reflect.Uintptr {
		return -1
	}
	return int(off)
}

// ownerBytes is how much of a packet's owner prefetchLeaves fetches (dss:
// a response's memory is one object of 320 bytes).
const ownerBytes = 320

// mapHeader is the start of the runtime's map header (Go 1.24 and later,
// internal/runtime/maps.Map): a map of up to eight entries has no
// directory (dirLen 0), and dirPtr is its one group.
// TestInflightMapGroupHoldsTheEntries fails when that changes.
type mapHeader struct {
	used   uint64
	seed   uintptr
	dirPtr unsafe.Pointer
	dirLen int
}

// smallGroupBytes is the size of the group of a map[uint16]*T: a control
// word and eight slots of a key and a pointer.
const smallGroupBytes = 8 + 8*16

// internalMap is the inflight map's header. It does not read the map.
func (i *Inflight) internalMap() unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&i.internal))
}

// dataOf returns the data word of an interface value: for a pointer, the
// pointer.
func dataOf(v any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&v))[1]
}

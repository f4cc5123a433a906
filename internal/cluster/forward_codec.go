package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/dssio/dss/internal/bincode"
	"io"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// A stream of forwarded writes (connection kind connForward) carries
// frames: a uvarint length, then the frame's body, a uvarint count of
// items followed by the items. The follower opens the stream with a
// header (forwardMagic, its node id, its process epoch and the stream's
// sequence number) and then sends frames of writes; the leader sends
// frames of results back, each naming the write it answers.

// forwardMagic starts every stream of forwarded writes: a node that does
// not speak this version of the stream closes it.
const forwardMagic = "dss-forward-1\n"

// maxForwardFrame bounds a frame a node reads: a write is at most a
// packet the broker took, and a follower cuts its frames well below.
const maxForwardFrame = 1 << 30

// forwardedWrite is a write as a follower forwards it: the request as the
// client sent it, so that the leader decides its time and version.
type forwardedWrite struct {
	id       uint64
	verb     wire.Verb
	cond     wire.Condition
	px       int64
	key      []byte
	value    []byte
	ts       hlc.Timestamp
	hasTS    bool
	fence    hlc.Timestamp
	hasFence bool
	volatile bool
	client   string
	corr     []byte
}

const (
	fwdHasTS    = 1 << 0
	fwdHasFence = 1 << 1
	fwdVolatile = 1 << 2
)

// appendForwardedWrite encodes op's write as the item id. Everything of
// the request is copied into b: the request itself lives in the
// connection's read buffer, which the connection's next packet reuses.
func appendForwardedWrite(b []byte, id uint64, op *engine.Op) []byte {
	r := &op.Request
	var flags byte
	if op.HasTimestamp {
		flags |= fwdHasTS
	}
	if op.HasFence {
		flags |= fwdHasFence
	}
	if op.Volatile {
		flags |= fwdVolatile
	}
	b = binary.AppendUvarint(b, id)
	b = append(b, byte(r.Verb), byte(r.Cond), flags)
	b = binary.AppendVarint(b, r.PX)
	b = bincode.AppendBytes(b, r.Key)
	b = bincode.AppendBytes(b, r.Value)
	if op.HasTimestamp {
		b = bincode.AppendStamp(b, op.Timestamp)
	}
	if op.HasFence {
		b = bincode.AppendStamp(b, op.Fence)
	}
	b = bincode.AppendString(b, op.Client)
	return bincode.AppendBytes(b, op.Correlation)
}

// decodeForwardedWrite reads one item that appendForwardedWrite wrote.
// The byte slices alias the decoder's input.
func decodeForwardedWrite(d *decoder) forwardedWrite {
	var w forwardedWrite
	w.id = d.Uvarint()
	w.verb = wire.Verb(d.Byte())
	w.cond = wire.Condition(d.Byte())
	flags := d.Byte()
	w.px = d.Varint()
	w.key = d.Bytes()
	w.value = d.Bytes()
	if flags&fwdHasTS != 0 {
		w.ts, w.hasTS = d.Stamp(), true
	}
	if flags&fwdHasFence != 0 {
		w.fence, w.hasFence = d.Stamp(), true
	}
	w.volatile = flags&fwdVolatile != 0
	w.client = d.Str()
	w.corr = d.Bytes()
	switch w.verb {
	case wire.VerbSet, wire.VerbDel, wire.VerbVDel:
	default:
		d.Fail()
	}
	return w
}

// op returns the engine request of a forwarded write.
func (w *forwardedWrite) op() engine.Op {
	return engine.Op{
		Request:   wire.Request{Verb: w.verb, Key: w.key, Value: w.value, Cond: w.cond, PX: w.px},
		Timestamp: w.ts, HasTimestamp: w.hasTS,
		Fence: w.fence, HasFence: w.hasFence, Volatile: w.volatile,
		Client: w.client, Correlation: w.corr,
	}
}

// forwardResult is the leader's answer to a forwarded write: its result,
// and the index the leader has applied by then, which the follower's copy
// applies before the client's reads on it go on.
type forwardResult struct {
	id         uint64
	err        string // protocol error text; "" for none
	outcome    store.Outcome
	version    hlc.Timestamp
	hasVersion bool
	index      uint64
}

// resultOf returns the answer to the write id from its engine result.
func resultOf(id uint64, r *engine.Result, index uint64) forwardResult {
	fr := forwardResult{id: id, outcome: r.Outcome, version: r.Version, hasVersion: r.HasVersion, index: index}
	if r.Err != nil {
		fr.err = r.Err.Text()
	}
	return fr
}

// unavailable reports whether the leader took no more writes of the
// stream from this one on.
func (r *forwardResult) unavailable() bool { return r.err == wire.ErrUnavailable.Text() }

// result returns the engine result the follower answers its client with.
func (r *forwardResult) result() engine.Result {
	res := engine.Result{Outcome: r.outcome, Version: r.version, HasVersion: r.hasVersion}
	if r.err != "" {
		if res.Err = wire.ErrorByText(r.err); res.Err == nil {
			res.Err = wire.ErrUnavailable
		}
	}
	return res
}

func appendForwardResult(b []byte, r *forwardResult) []byte {
	b = binary.AppendUvarint(b, r.id)
	b = bincode.AppendString(b, r.err)
	b = append(b, byte(r.outcome))
	if r.hasVersion {
		b = append(b, 1)
		b = bincode.AppendStamp(b, r.version)
	} else {
		b = append(b, 0)
	}
	return binary.AppendUvarint(b, r.index)
}

func decodeForwardResult(d *decoder) forwardResult {
	var r forwardResult
	r.id = d.Uvarint()
	r.err = d.Str()
	r.outcome = store.Outcome(d.Byte())
	if d.Byte() == 1 {
		r.version, r.hasVersion = d.Stamp(), true
	}
	r.index = d.Uvarint()
	return r
}

// frame collects items into the body of one frame.
type frame struct {
	buf   []byte // room for the header, then the items
	count int
}

// frameHead is the room a frame's length and count take at most.
const frameHead = 2 * binary.MaxVarintLen64

func (f *frame) reset() {
	f.buf = append(f.buf[:0], make([]byte, frameHead)...)
	f.count = 0
}

// bytes returns the frame as it is sent: the items with their length and
// count before them, placed at the end of the room kept for them.
func (f *frame) bytes() []byte {
	var head [frameHead]byte
	count := binary.AppendUvarint(head[:0], uint64(f.count))
	body := len(f.buf) - frameHead + len(count)
	var lenBuf [binary.MaxVarintLen64]byte
	length := binary.AppendUvarint(lenBuf[:0], uint64(body))
	start := frameHead - len(count) - len(length)
	copy(f.buf[start:], length)
	copy(f.buf[start+len(length):], count)
	return f.buf[start:]
}

var errFrameTooLarge = errors.New("cluster: a forwarded frame is larger than allowed")

// readFrame reads one frame's body (after its length) into a new buffer,
// which the items decoded from it may alias for as long as they live.
func readFrame(r *bufio.Reader) (*decoder, int, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, 0, err
	}
	if n > maxForwardFrame {
		return nil, 0, errFrameTooLarge
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, 0, err
	}
	d := newDecoder(body)
	count := d.Uvarint()
	if d.Err() != nil || count > n {
		return nil, 0, errShort
	}
	return &d, int(count), nil
}

// forwardHeader opens a stream: who sends it, and which of its streams
// it is.
type forwardHeader struct {
	node  string
	epoch uint64 // the sending process's, drawn at its start
	seq   uint64 // grows with every stream the process opens
}

func appendForwardHeader(b []byte, h forwardHeader) []byte {
	b = append(b, forwardMagic...)
	b = bincode.AppendString(b, h.node)
	b = binary.AppendUvarint(b, h.epoch)
	return binary.AppendUvarint(b, h.seq)
}

func readForwardHeader(r *bufio.Reader) (forwardHeader, error) {
	magic := make([]byte, len(forwardMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return forwardHeader{}, err
	}
	if string(magic) != forwardMagic {
		return forwardHeader{}, fmt.Errorf("cluster: a forwarding stream of another version (%q)", magic)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > 1024 {
		return forwardHeader{}, errShort
	}
	node := make([]byte, n)
	if _, err := io.ReadFull(r, node); err != nil {
		return forwardHeader{}, err
	}
	h := forwardHeader{node: string(node)}
	if h.epoch, err = binary.ReadUvarint(r); err != nil {
		return forwardHeader{}, err
	}
	if h.seq, err = binary.ReadUvarint(r); err != nil {
		return forwardHeader{}, err
	}
	return h, nil
}

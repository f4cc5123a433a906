package cluster

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"github.com/dssio/dss/internal/bincode"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
)

// The kinds of command entries in the Raft log.
const (
	// entryWrites holds a batch of decided writes, in version order.
	entryWrites byte = 1
	// entryTermStart is proposed by a new leader before it takes writes:
	// once it is applied, every entry of earlier terms is applied too,
	// so the leader's clock is above every version in its log.
	entryTermStart byte = 2
	// entryPubSub holds a batch of commands of the broker's replicated
	// metadata (package pubsub): routes, retained messages, client ids.
	entryPubSub byte = 3
)

// origin says which proposal of which node a write is, so that the node
// that proposed it finds the request it answers. Epoch is drawn at
// random when the process starts: after a restart, the writes of the
// earlier run answer nobody.
type origin struct {
	node  string
	epoch uint64
	id    uint64
}

const (
	flagFence    = 1 << 0
	flagVolatile = 1 << 1
)

// appendWrite encodes a decided write. The dedupe key (client id and
// correlation data) travels with it.
func appendWrite(b []byte, o origin, w *engine.Write) []byte {
	b = bincode.AppendString(b, o.node)
	b = binary.AppendUvarint(b, o.epoch)
	b = binary.AppendUvarint(b, o.id)
	var client string
	var corr []byte
	if w.Op != nil {
		client, corr = w.Op.Client, w.Op.Correlation
	}
	b = bincode.AppendString(b, client)
	b = bincode.AppendBytes(b, corr)
	c := &w.Command
	var flags byte
	if c.HasFence {
		flags |= flagFence
	}
	if c.Volatile {
		flags |= flagVolatile
	}
	b = append(b, byte(c.Op), byte(c.Cond), flags)
	b = bincode.AppendBytes(b, c.Key)
	b = bincode.AppendBytes(b, c.Value)
	b = binary.AppendVarint(b, c.Time)
	b = binary.AppendVarint(b, c.ExpiresAt)
	b = bincode.AppendStamp(b, c.Version)
	b = bincode.AppendStamp(b, w.ExpireVersion)
	if c.HasFence {
		b = bincode.AppendStamp(b, c.Fence)
	}
	return b
}

// decodedWrite is a write read back from the log, with what the FSM needs
// beside it.
type decodedWrite struct {
	origin origin
	dedupe string // client id and correlation data; "" for none
	write  engine.Write
}

var errBadEntry = errors.New("cluster: malformed command entry")

// decodeWrites decodes the writes of an entryWrites entry (after its kind
// byte), appending them to ws. The writes alias data.
func decodeWrites(data []byte, ws []decodedWrite) ([]decodedWrite, error) {
	d := newDecoder(data)
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		var dw decodedWrite
		dw.origin = origin{node: d.Str(), epoch: d.Uvarint(), id: d.Uvarint()}
		client, corr := d.Bytes(), d.Bytes()
		c := &dw.write.Command
		c.Op = store.Op(d.Byte())
		c.Cond = store.Condition(d.Byte())
		flags := d.Byte()
		c.Key = d.Bytes()
		c.Value = d.Bytes()
		c.Time = d.Varint()
		c.ExpiresAt = d.Varint()
		c.Version = d.Stamp()
		dw.write.ExpireVersion = d.Stamp()
		if flags&flagFence != 0 {
			c.Fence, c.HasFence = d.Stamp(), true
		}
		c.Volatile = flags&flagVolatile != 0
		if len(corr) > 0 && d.Err() == nil {
			dw.dedupe = dedupeKey(client, corr, c)
		}
		ws = append(ws, dw)
	}
	if d.Err() != nil || d.Len() != 0 {
		return ws, errBadEntry
	}
	return ws, nil
}

// dedupeKey is the key under which a request is remembered: its client
// id and correlation data, and a digest of what the request asks for
// (verb, condition, key, value, expiry and fencing token). A client that
// reuses its correlation data for another request makes a new request,
// which is applied; a retry of the same request is recognised. The
// request's own clock (__ts) is left out: a client may read its clock
// again when it sends a request again.
func dedupeKey(client, corr []byte, c *store.Command) string {
	h := sha256.New()
	var head [3 + 4*binary.MaxVarintLen64]byte
	b := append(head[:0], byte(c.Op), byte(c.Cond))
	var px int64
	if c.ExpiresAt != 0 {
		px = c.ExpiresAt - c.Time
	}
	b = binary.AppendVarint(b, px)
	b = binary.AppendUvarint(b, uint64(len(c.Key)))
	b = binary.AppendUvarint(b, uint64(len(c.Value)))
	h.Write(b)
	h.Write(c.Key)
	h.Write(c.Value)
	if c.HasFence {
		h.Write(bincode.AppendStamp(head[:0], c.Fence))
	}
	var sum [sha256.Size]byte
	digest := h.Sum(sum[:0])[:digestSize]
	k := make([]byte, 0, 2*binary.MaxVarintLen64+len(client)+len(corr)+digestSize)
	k = bincode.AppendBytes(k, client)
	k = bincode.AppendBytes(k, corr)
	return string(append(k, digest...))
}

// digestSize is how many bytes of a request's SHA-256 its dedupe key
// keeps: enough that two different requests of one client never meet.
const digestSize = 16

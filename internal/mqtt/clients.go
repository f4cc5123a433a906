// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2023 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/xid"

	"github.com/dssio/dss/internal/mqtt/mempool"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/rawio"
)

const (
	defaultKeepalive             uint16 = 10 // the default connection keepalive value in seconds.
	defaultClientProtocolVersion byte   = 4  // the default mqtt protocol version of connecting clients (if somehow unspecified).
	minimumKeepalive             uint16 = 5  // the minimum recommended keepalive - values under with display a warning.
)

var (
	ErrMinimumKeepalive = errors.New("client keepalive is below minimum recommended value and may exhibit connection instability")
)

// ReadFn handles a packet a client read; pk is valid until it returns.
type ReadFn func(cl *Client, pk *packets.Packet) error

// Clients contains a map of the clients known by the broker.
type Clients struct {
	internal map[string]*Client // clients known by the broker, keyed on client id.
	sync.RWMutex
}

// NewClients returns an instance of Clients.
func NewClients() *Clients {
	return &Clients{
		internal: make(map[string]*Client),
	}
}

// Add adds a new client to the clients map, keyed on client id.
func (cl *Clients) Add(val *Client) {
	cl.Lock()
	defer cl.Unlock()
	cl.internal[val.ID] = val
}

// GetAll returns all the clients.
func (cl *Clients) GetAll() map[string]*Client {
	cl.RLock()
	defer cl.RUnlock()
	m := map[string]*Client{}
	for k, v := range cl.internal {
		m[k] = v
	}
	return m
}

// AppendAll appends all the clients to dst and returns the result. dss:
// GetAll copies the map, which a sweep through every client has no need
// of.
func (cl *Clients) AppendAll(dst []*Client) []*Client {
	cl.RLock()
	defer cl.RUnlock()
	for _, v := range cl.internal {
		dst = append(dst, v)
	}
	return dst
}

// Get returns the value of a client if it exists.
func (cl *Clients) Get(id string) (*Client, bool) {
	cl.RLock()
	defer cl.RUnlock()
	val, ok := cl.internal[id]
	return val, ok
}

// Len returns the length of the clients map.
func (cl *Clients) Len() int {
	cl.RLock()
	defer cl.RUnlock()
	val := len(cl.internal)
	return val
}

// Delete removes a client from the internal map.
func (cl *Clients) Delete(id string) {
	cl.Lock()
	defer cl.Unlock()
	delete(cl.internal, id)
}

// GetByListener returns clients matching a listener id.
func (cl *Clients) GetByListener(id string) []*Client {
	cl.RLock()
	defer cl.RUnlock()
	// dss: cl.Len() here took the read lock a second time, which waits
	// forever when a writer queued in between.
	clients := make([]*Client, 0, len(cl.internal))
	for _, client := range cl.internal {
		if client.Net.Listener == id && !client.Closed() {
			clients = append(clients, client)
		}
	}
	return clients
}

// Client contains information about a client known by the broker.
type Client struct {
	Properties   ClientProperties // client properties
	State        ClientState      // the operational state of the client.
	Net          ClientConnection // network connection state of the client
	ID           string           // the client id.
	ops          *ops             // ops provides a reference to server ops.
	sync.RWMutex                  // guards the choice of the next packet id (NextPacketID)

	// Attached is the embedding application's: what it keeps for the
	// connection, beside it. dss: the route of the client's responses.
	Attached atomic.Value
	// Auth is what the embedding application's authentication found for
	// the connection (dss: its principal and grants). Access.Connect
	// sets it before the client is registered; it does not change after.
	Auth any
}

// ClientConnection contains the connection transport and metadata for the client.
type ClientConnection struct {
	Conn     net.Conn      // the net.Conn used to establish the connection
	bconn    *bufio.Reader // a buffered net.Conn for reading packets
	Remote   string        // the remote address of the client
	Listener string        // listener id of the client
	Inline   bool          // if true, the client is the built-in 'inline' embedded client

	deadlineAt  time.Time // dss: the read and write deadline last set, by the read goroutine
	deadlineSet bool
	// ackBuf holds the body of an acknowledgement without properties
	// while it is decoded, by the read goroutine. dss: one arrives for
	// every QoS 1 message a client receives; nothing it decodes to
	// refers to its bytes.
	ackBuf [3]byte
	// consumedBuf and consumedUser hold the body and the user properties
	// of a publish to Options.ConsumedTopic while it is handled, by the
	// read goroutine. dss: a state store request would otherwise cost
	// two allocations that outlive it.
	consumedBuf  []byte
	consumedUser []packets.UserProperty
	// writeMu makes writes to Conn whole. dss: the client's own lock did,
	// and a write to a client that does not read held it until the write
	// deadline: whoever published to that client (routing, the state
	// store's delivery of every journaled result) waited for it in
	// NextPacketID.
	writeMu sync.Mutex
	// raw is the connection's file descriptor access when it has one (a
	// TCP or Unix connection, not TLS or a websocket). dss: WriteNow
	// writes through it without waiting when it must not block.
	raw syscall.RawConn
	// writer writes through raw for WriteNow (under writeMu).
	writer fdWriter
	// src is what bconn reads: Conn, or a read loop's one read of a
	// turn; loop is the state the connection shares with its read loop
	// (dss, see loopconn.go).
	src  connReader
	loop loopState
	// lingerUntil, in Unix nanoseconds, is set when the server ended the
	// connection with a DISCONNECT: the connection is read and closed by
	// then (see stopAfterDisconnect). dss.
	lingerUntil atomic.Int64
	// gate holds the connection's reads while the application has
	// Options.MaxPendingPerClient of its packets in hand (dss, see
	// BeginPending).
	gate readGate
}

// maxConsumedBuffer bounds the buffer a connection keeps for publishes to
// Options.ConsumedTopic; a larger one gets memory of its own.
const maxConsumedBuffer = 16 << 10

// ClientProperties contains the properties which define the client behaviour.
type ClientProperties struct {
	Props           packets.Properties
	Will            Will
	Username        []byte
	ProtocolVersion byte
	Clean           bool
}

// Will contains the last will and testament details for a client connection.
type Will struct {
	Payload           []byte                 // -
	User              []packets.UserProperty // -
	TopicName         string                 // -
	Flag              uint32                 // 0,1
	WillDelayInterval uint32                 // -
	Qos               byte                   // -
	Retain            bool                   // -
}

// ClientState tracks the state of the client.
type ClientState struct {
	TopicAliases  TopicAliases   // a map of topic aliases
	stopCause     atomic.Value   // reason for stopping
	Inflight      *Inflight      // a map of in-flight qos messages
	Subscriptions *Subscriptions // a map of the subscription filters a client maintains
	disconnected  int64          // the time the client disconnected in unix time, for calculating expiry
	outbound      outboundQueue  // queue for pending outbound packets
	endOnce       sync.Once      // only end once
	isTakenOver   atomic.Bool    // used to identify orphaned clients
	// dss: a delivery adds to the session's messages under handover's
	// read lock, a takeover moves them to the new connection under its
	// write lock; successor is that connection, and awaitingConnack is
	// set until the new connection's CONNACK is written (its messages
	// are queued until then, and sent after it).
	handover        sync.RWMutex
	successor       atomic.Pointer[Client]
	awaitingConnack bool // guarded by handover
	// retained sends the retained messages of new subscriptions that
	// could not go at once (dss, see retaineddelivery.go).
	retained retainedSender
	// flow is the client's part in back-pressure (dss, see
	// backpressure.go).
	flow       flowState
	packetID   uint32             // the current highest packetID
	open       context.Context    // indicate that the client is open for packet exchange
	cancelOpen context.CancelFunc // cancel function for open context
	// ended is set when cancelOpen cancels open. dss: Closed reads it,
	// in the Client, rather than the context's own memory, which is out
	// of the cache when thousands of connections take turns.
	ended           atomic.Bool
	outboundQty     int32  // number of messages currently in the outbound queue
	Keepalive       uint16 // the number of seconds the connection can wait
	ServerKeepalive bool   // keepalive was set by the server
}

// newClient returns a new instance of Client. This is almost exclusively used by Server
// for creating new clients, but it lives here because it's not dependent.
func newClient(c net.Conn, o *ops) *Client {
	ctx, cancel := context.WithCancel(context.Background())
	cl := &Client{
		State: ClientState{
			Inflight:      NewInflights(),
			Subscriptions: NewSubscriptions(),
			TopicAliases:  NewTopicAliases(o.options.Capabilities.TopicAliasMaximum),
			open:          ctx,
			Keepalive:     defaultKeepalive,
		},
		Properties: ClientProperties{
			ProtocolVersion: defaultClientProtocolVersion, // default protocol version
		},
		ops: o,
	}

	if c != nil {
		if rawIO {
			c = rawio.Wrap(c) // reads and writes of its own goroutines too
		}
		cl.Net = ClientConnection{
			Conn:   c,
			Remote: c.RemoteAddr().String(),
		}
		if sc, ok := c.(syscall.Conn); ok && rawIO {
			cl.Net.raw, _ = sc.SyscallConn()
		}
		cl.Net.src = connReader{conn: c, raw: cl.Net.raw, keepalive: &cl.Net.deadlineAt}
		cl.Net.src.readFD = cl.Net.src.readOnce
		cl.Net.writer.writeFD = cl.Net.writer.writeNoWait
		cl.Net.bconn = bufio.NewReaderSize(&cl.Net.src, o.options.ClientNetReadBufferSize)
	}

	cl.Net.gate.wake = make(chan struct{}, 1)
	cl.State.cancelOpen = func() {
		cl.State.ended.Store(true)
		cancel()
		cl.leaveLoop() // dss: a parked connection has no goroutine to see it
	}

	return cl
}

// ParseConnect parses the connect parameters and properties for a client.
func (cl *Client) ParseConnect(lid string, pk *packets.Packet) {
	cl.Net.Listener = lid

	cl.Properties.ProtocolVersion = pk.ProtocolVersion
	cl.Properties.Username = pk.Connect.Username
	cl.Properties.Clean = pk.Connect.Clean
	cl.Properties.Props = pk.Properties.Copy(false)

	if cl.Properties.Props.ReceiveMaximum > cl.ops.options.Capabilities.MaximumInflight { // 3.3.4 Non-normative
		cl.Properties.Props.ReceiveMaximum = cl.ops.options.Capabilities.MaximumInflight
	}

	if pk.Connect.Keepalive <= minimumKeepalive {
		// dss: a Debug line, not a Warn line per connection: a short or
		// disabled (0) keep alive is the client's legitimate choice.
		cl.ops.log.Debug(
			ErrMinimumKeepalive.Error(),
			"client", cl.ID,
			"keepalive", pk.Connect.Keepalive,
			"recommended", minimumKeepalive,
		)
	}

	cl.State.Keepalive = pk.Connect.Keepalive // [MQTT-3.2.2-22]
	if limit := cl.ops.options.Capabilities.MaximumKeepalive; limit > 0 && pk.ProtocolVersion == 5 &&
		(pk.Connect.Keepalive == 0 || pk.Connect.Keepalive > limit) {
		// dss: the server's cap, sent as Server Keep Alive, which the
		// client must use [MQTT-3.2.2-21]. An MQTT 3.1.1 client cannot be
		// told and keeps its own.
		cl.State.Keepalive = limit
		cl.State.ServerKeepalive = true
	}
	cl.State.Inflight.ResetReceiveQuota(int32(cl.ops.options.Capabilities.ReceiveMaximum)) // server receive max per client
	cl.State.Inflight.ResetSendQuota(cl.sendWindow())                                      // client receive max
	cl.State.TopicAliases.Outbound = NewOutboundTopicAliases(cl.Properties.Props.TopicAliasMaximum)

	cl.ID = pk.Connect.ClientIdentifier
	if cl.ID == "" {
		cl.ID = xid.New().String() // [MQTT-3.1.3-6] [MQTT-3.1.3-7]
		cl.Properties.Props.AssignedClientID = cl.ID
	}

	if pk.Connect.WillFlag {
		cl.Properties.Will = Will{
			Qos:               pk.Connect.WillQos,
			Retain:            pk.Connect.WillRetain,
			Payload:           pk.Connect.WillPayload,
			TopicName:         pk.Connect.WillTopic,
			WillDelayInterval: pk.Connect.WillProperties.WillDelayInterval,
			User:              pk.Connect.WillProperties.User,
		}
		if pk.Properties.SessionExpiryIntervalFlag &&
			pk.Properties.SessionExpiryInterval < pk.Connect.WillProperties.WillDelayInterval {
			cl.Properties.Will.WillDelayInterval = pk.Properties.SessionExpiryInterval
		}
		if pk.Connect.WillFlag {
			cl.Properties.Will.Flag = 1 // atomic for checking
		}
	}
}

// sendWindow is how many QoS 1 and 2 messages the client may be sent
// unacknowledged: its Receive Maximum (at most Capabilities.
// MaximumInflight), or MaximumInflight for a client that states none
// (MQTT 3.1.1, or an MQTT 5 client that leaves it at its default).
//
// dss: such a client was sent any number, past MaximumInflight of
// which they were dropped; now they wait in its session (parked) until
// it acknowledges some, and their publishers are slowed meanwhile.
func (cl *Client) sendWindow() int32 {
	if rm := cl.Properties.Props.ReceiveMaximum; rm > 0 {
		return int32(rm)
	}
	return int32(cl.ops.options.Capabilities.MaximumInflight)
}

// keepaliveTimeout is how long a connection with keepalive (seconds) may
// stay silent before the server ends it: one and a half times the
// keepalive [MQTT-3.1.2-22].
//
// dss: upstream rounded the half down to whole seconds, and ended a
// connection with a keepalive of 1 after 1 s of silence, of 3 after 4 s.
func keepaliveTimeout(keepalive uint16) time.Duration {
	return time.Duration(keepalive) * time.Second * 3 / 2
}

// refreshDeadline refreshes the read/write deadline for the net.Conn connection.
//
// dss: the deadline was set before every packet, which costs a timer
// update each time. It is now moved only when it has come closer than
// 1.5×keepalive by more than keepalive/8 (and set once when there is
// none), so it never comes closer than 1.375×keepalive while packets
// arrive.
func (cl *Client) refreshDeadline(keepalive uint16) {
	if cl.Net.Conn == nil {
		return
	}
	if keepalive == 0 {
		if !cl.Net.deadlineAt.IsZero() || !cl.Net.deadlineSet {
			cl.Net.deadlineAt, cl.Net.deadlineSet = time.Time{}, true
			_ = cl.Net.Conn.SetDeadline(time.Time{}) // nil time disables the deadline
		}
		return
	}
	full := keepaliveTimeout(keepalive)
	now := time.Now()
	if cl.Net.deadlineSet && cl.Net.deadlineAt.Sub(now) > full-time.Duration(keepalive)*time.Second/8 {
		return
	}
	cl.Net.deadlineAt, cl.Net.deadlineSet = now.Add(full), true
	_ = cl.Net.Conn.SetDeadline(cl.Net.deadlineAt) // [MQTT-3.1.2-22]
}

// endPacket ends the read deadline of the packet read last, if it set
// one: the keepalive's is set again.
func (cl *Client) endPacket() {
	src := &cl.Net.src
	src.packetTimeout = 0
	if src.packetDeadline {
		src.packetDeadline = false
		cl.Net.deadlineSet = false
	}
}

// stillSending is asked when a read of the established connection
// passed its deadline (the keepalive's, or a packet's): if the client's
// bytes wait in the socket, it did send in time and the server was late
// to read them (it was stopped, or starved of CPU), and the keepalive's
// deadline starts again from now.
//
// dss: a read past its deadline fails without looking at the socket: a
// server stopped for longer than 1.5 keepalives ended every connection
// whose PINGREQs waited in their sockets.
func (cl *Client) stillSending() bool {
	if !socketReadable(cl.Net.Conn) {
		return false
	}
	cl.Net.deadlineSet = false
	cl.refreshDeadline(cl.State.Keepalive)
	return true
}

// writeConn writes b to the connection; the caller holds its write lock.
//
// dss: the write deadline is the keepalive's (see refreshDeadline). One
// that passed while the socket takes bytes, the client reading what it
// is sent, passed because the server did not run (it was stopped, or
// starved of CPU): the write is made again with a deadline from now.
func (cl *Client) writeConn(b []byte) (int, error) {
	written := 0
	for {
		n, err := cl.Net.Conn.Write(b[written:])
		written += n
		if err == nil || !cl.lateWrite(err) {
			return written, err
		}
	}
}

// lateWrite reports whether err is a write deadline that passed while
// the client was reading, and if so moves the write deadline on from now.
func (cl *Client) lateWrite(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) || !socketWritable(cl.Net.Conn) {
		return false
	}
	var d time.Time
	if full := keepaliveTimeout(cl.State.Keepalive); full > 0 {
		d = time.Now().Add(full)
	}
	_ = cl.Net.Conn.SetWriteDeadline(d)
	return true
}

// NextPacketID returns the next available (unused) packet id for the client.
// If no unused packet ids are available, an error is returned and the client
// should be disconnected.
func (cl *Client) NextPacketID() (i uint32, err error) {
	cl.Lock()
	defer cl.Unlock()

	i = atomic.LoadUint32(&cl.State.packetID)
	started := i
	overflowed := false
	for {
		if overflowed && i == started {
			return 0, packets.ErrQuotaExceeded
		}

		if i >= cl.ops.options.Capabilities.maximumPacketID {
			overflowed = true
			i = 0
			continue
		}

		i++

		if !cl.State.Inflight.Has(uint16(i)) {
			atomic.StoreUint32(&cl.State.packetID, i)
			return i, nil
		}
	}
}

// ResendInflightMessages attempts to resend any pending inflight messages to connected clients.
func (cl *Client) ResendInflightMessages(force bool) error {
	if cl.State.Inflight.Len() == 0 {
		return nil
	}

	for _, tk := range cl.State.Inflight.GetAll(false) {
		if tk.FixedHeader.Type == packets.Publish {
			// dss: a message resent to a new connection is delivered to
			// it, and checked as every delivery is; upstream resent the
			// old session's messages unchecked.
			if !cl.ops.options.allowed(cl, tk.TopicName, false) {
				cl.dropInflight(&tk)
				continue
			}
			// dss: DUP 1 only for a message that was sent before: one
			// queued for the session while it had no connection, or
			// parked for send quota, goes out for the first time
			// [MQTT-3.3.1-1]. A parked message stays parked while the
			// send quota is spent (it was sent here, and again once
			// released); sent, it counts against the quota.
			parked := tk.Expiry < 0
			if parked && atomic.LoadInt32(&cl.State.Inflight.sendQuota) == 0 {
				continue
			}
			tk.FixedHeader.Dup = !tk.Queued && !parked // [MQTT-3.3.1-1] [MQTT-3.3.1-3]
			if tk.Queued || parked {
				tk.Queued = false
				if parked {
					tk.Expiry = 0
				}
				// dss: marked sent before a takeover clones it, or not
				// sent here: the new connection sends it, once.
				cl.State.handover.RLock()
				if cl.State.isTakenOver.Load() {
					cl.State.handover.RUnlock()
					return nil
				}
				cl.State.Inflight.Set(&tk)
				cl.State.handover.RUnlock()
			}
			cl.State.Inflight.DecreaseSendQuota()
		}

		err := cl.Write(&tk)
		if errors.Is(err, errMessageExpired) {
			cl.dropInflight(&tk) // dss: expired while the session waited
			continue
		}
		if err != nil {
			return err
		}

		if tk.FixedHeader.Type == packets.Puback || tk.FixedHeader.Type == packets.Pubcomp {
			if ok := cl.State.Inflight.DeletePacket(&tk); ok {
				atomic.AddInt64(&cl.ops.info.Inflight, -1)
			}
		}
	}

	return nil
}

// ClearInflights deletes all inflight messages for the client, e.g. for a disconnected user with a clean session.
func (cl *Client) ClearInflights() {
	for _, tk := range cl.State.Inflight.GetAll(false) {
		if ok := cl.State.Inflight.DeletePacket(&tk); ok {
			atomic.AddInt64(&cl.ops.info.Inflight, -1)
		}
	}
}

// ClearExpiredInflights deletes any inflight messages which have expired.
// dss: it looks at the packets in place and copies only those it drops;
// it ran every second for every client, and copied every packet in flight
// (800 bytes each) and sorted the copies to find none expired.
func (cl *Client) ClearExpiredInflights(now, maximumExpiry int64) []uint16 {
	var deleted []uint16
	for _, key := range cl.State.Inflight.expired(now, maximumExpiry) {
		tk, ok := cl.State.Inflight.get(key)
		if !ok || !inflightExpired(&tk, now, maximumExpiry) {
			continue // acknowledged, or replaced by a newer packet, since
		}
		if cl.dropInflight(&tk) {
			deleted = append(deleted, tk.PacketID)
		}
	}

	return deleted
}

// dropInflight drops the server's message tk from flight, unacknowledged,
// and reports whether it was there. dss: a message that took send quota
// (sent, not parked) gives it back; dropped at expiry, it kept the quota
// for good.
func (cl *Client) dropInflight(tk *packets.Packet) bool {
	if !cl.State.Inflight.DeletePacket(tk) {
		return false
	}
	if (tk.FixedHeader.Type == packets.Publish || tk.FixedHeader.Type == packets.Pubrel) && tk.Expiry >= 0 {
		cl.State.Inflight.IncreaseSendQuota()
	}
	atomic.AddInt64(&cl.ops.info.Inflight, -1)
	return true
}

// inflightExpired reports whether the inflight packet tk is due to be
// dropped at now.
func inflightExpired(tk *packets.Packet, now, maximumExpiry int64) bool {
	expired := tk.ProtocolVersion == 5 && tk.Expiry > 0 && tk.Expiry < now // [MQTT-3.3.2-5]

	// If the maximum message expiry interval is set (greater than 0), and the message
	// retention period exceeds the maximum expiry, the message will be forcibly removed.
	enforced := maximumExpiry > 0 && now-tk.Created > maximumExpiry

	return expired || enforced
}

// Read reads incoming packets from the connected client and transforms them into
// packets to be handled by the packetHandler.
func (cl *Client) Read(packetHandler ReadFn) error {
	var err error

	for {
		if cl.Closed() {
			return nil
		}

		if cl.readHeld() {
			cl.waitReadable()
			continue
		}

		cl.readOn()
		cl.endPacket()
		if cl.parks() && cl.park() {
			return errParked // the connection goes on without this goroutine
		}

		cl.refreshDeadline(cl.State.Keepalive)
		var fh packets.FixedHeader
		err = cl.ReadFixedHeader(&fh)
		if err != nil {
			return err
		}

		if err := cl.readPacket(&fh, packetHandler); err != nil {
			return err
		}
	}
}

// inPackets holds the packets connections read into: each is handled
// while it is read and kept by nobody (see ReadFn).
var inPackets = sync.Pool{New: func() any { return new(packets.Packet) }}

// readPacket reads the packet whose fixed header fh was read into a
// packet of inPackets, and hands it to handle.
//
// dss: the one way a connection's packets are read after its CONNECT:
// its reader goroutine (Read) and its read loop's turn both come here.
// The packet (800 bytes) is in no goroutine's frame, and is passed by
// pointer from here to the process functions, the interfaces of hooks.go
// and the inflight entries.
func (cl *Client) readPacket(fh *packets.FixedHeader, handle ReadFn) error {
	pk := inPackets.Get().(*packets.Packet)
	err := cl.ReadPacket(fh, pk)
	if err == nil {
		err = handle(cl, pk)
	}
	*pk = packets.Packet{} // it refers to the connection's buffers
	inPackets.Put(pk)
	return err
}

// Stop instructs the client to shut down all processing goroutines and disconnect.
func (cl *Client) Stop(err error) {
	cl.State.endOnce.Do(func() {
		if err != nil {
			cl.State.stopCause.Store(err)
		}

		// dss: the client is Closed before its connection is: a message
		// routed to it once the peer has seen the end of the connection
		// is queued for its session, and delivered for the first time
		// when it comes back, not taken for sent and redelivered with
		// DUP 1.
		if cl.State.cancelOpen != nil {
			cl.State.cancelOpen()
		}

		if cl.Net.Conn != nil {
			_ = cl.Net.Conn.Close() // omit close error
		}

		atomic.StoreInt64(&cl.State.disconnected, time.Now().Unix())
	})
}

// disconnectLinger is how long, at most, the server reads what a client
// still sends after the server sent it a DISCONNECT and shut its side of
// the connection, before it closes the connection.
const disconnectLinger = time.Second

// stopAfterDisconnect ends the client as Stop does, once the server has
// written it a DISCONNECT, but closes the connection gently: it shuts the
// sending side (the client reads the DISCONNECT, then the end of the
// stream) and leaves the connection to be read until the client closes
// it or disconnectLinger passes (closeLingering, on the connection's
// reader goroutine; a timer closes it if nobody does).
//
// dss: the connection was closed at once, with the client's packets
// that the server had not read still in its buffer, and the kernel
// answered them with a reset: the client saw "connection reset" instead
// of the reason code (0x93 receive maximum exceeded, say).
func (cl *Client) stopAfterDisconnect(err error) {
	cl.State.endOnce.Do(func() {
		if err != nil {
			cl.State.stopCause.Store(err)
		}
		if c := cl.Net.Conn; c != nil {
			cl.Net.lingerUntil.Store(time.Now().Add(disconnectLinger).UnixNano())
			if hc, ok := c.(interface{ CloseWrite() error }); ok {
				_ = hc.CloseWrite()
			}
			_ = c.SetReadDeadline(time.Now()) // a reader waiting for the client returns
			time.AfterFunc(2*disconnectLinger, func() { _ = c.Close() })
		}
		if cl.State.cancelOpen != nil {
			cl.State.cancelOpen()
		}
		atomic.StoreInt64(&cl.State.disconnected, time.Now().Unix())
	})
}

// closeLingering reads and discards what the client still sends after a
// DISCONNECT from the server, until the client closes the connection or
// the linger ends, and closes it. It does nothing for a connection the
// server did not end with a DISCONNECT.
func (cl *Client) closeLingering() {
	until := cl.Net.lingerUntil.Load()
	if until == 0 || cl.Net.Conn == nil {
		return
	}
	_ = cl.Net.Conn.SetReadDeadline(time.Unix(0, until))
	_, _ = io.Copy(io.Discard, cl.Net.Conn) // to the end of the stream, an error or the deadline
	_ = cl.Net.Conn.Close()
}

// StopCause returns the reason the client connection was stopped, if any.
func (cl *Client) StopCause() error {
	if cl.State.stopCause.Load() == nil {
		return nil
	}
	return cl.State.stopCause.Load().(error)
}

// StopTime returns the the time the client disconnected in unix time, else zero.
func (cl *Client) StopTime() int64 {
	return atomic.LoadInt64(&cl.State.disconnected)
}

// Closed returns true if client connection is closed.
func (cl *Client) Closed() bool {
	return cl.State.open == nil || cl.State.ended.Load()
}

func (cl *Client) IsTakenOver() bool {
	return cl.State.isTakenOver.Load()
}

// ReadFixedHeader reads in the values of the next packet's fixed header.
func (cl *Client) ReadFixedHeader(fh *packets.FixedHeader) error {
	if cl.Net.bconn == nil {
		return ErrConnectionClosed
	}

	b, err := cl.Net.bconn.ReadByte()
	if err != nil {
		return err
	}
	// dss: the rest of the packet must keep coming (see
	// Options.PacketReadTimeout).
	cl.Net.src.packetTimeout = cl.ops.options.PacketReadTimeout

	err = fh.Decode(b)
	if err != nil {
		return packetError(fh, -1, err)
	}

	var bu int
	fh.Remaining, bu, err = packets.DecodeLength(cl.Net.bconn)
	if err != nil {
		return packetError(fh, -1, err)
	}

	// dss: the size is the whole packet's, the bytes of its remaining
	// length included; upstream left them out, taking packets up to four
	// bytes over the maximum announced.
	if cl.ops.options.Capabilities.MaximumPacketSize > 0 && uint32(1+bu+fh.Remaining) > cl.ops.options.Capabilities.MaximumPacketSize {
		return packetError(fh, fh.Remaining, packets.ErrPacketTooLarge) // [MQTT-3.2.2-15]
	}

	atomic.AddInt64(&cl.ops.info.BytesReceived, int64(bu+1))
	return nil
}

// ReadPacket reads the body of the packet whose fixed header fh was read
// and decodes it into pk, a zero packet.
func (cl *Client) ReadPacket(fh *packets.FixedHeader, pk *packets.Packet) error {
	pk.ProtocolVersion = cl.Properties.ProtocolVersion // inherit client protocol version for decoding
	pk.FixedHeader = *fh
	var p []byte
	switch pk.FixedHeader.Type {
	case packets.Puback, packets.Pubrec, packets.Pubrel, packets.Pubcomp:
		if pk.FixedHeader.Remaining <= len(cl.Net.ackBuf) { // no properties
			p = cl.Net.ackBuf[:pk.FixedHeader.Remaining]
		}
	}
	consumed := false
	if p == nil && pk.FixedHeader.Type == packets.Publish && cl.consumes(pk.FixedHeader.Remaining) {
		p, consumed = cl.consumedBody(pk.FixedHeader.Remaining), true
	}
	if p == nil {
		// Routing and retained messages keep what the packet refers to.
		p = make([]byte, pk.FixedHeader.Remaining)
	}
	n, err := io.ReadFull(cl.Net.bconn, p)
	if err != nil {
		return err
	}

	atomic.AddInt64(&cl.ops.info.BytesReceived, int64(n))

	// dss: p is allocated for this packet alone (but for an
	// acknowledgement without properties), so the decoded values may
	// alias it; the second copy that was made here is gone.
	px := p
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectDecode(px)
	case packets.Disconnect:
		err = pk.DisconnectDecode(px)
	case packets.Connack:
		err = pk.ConnackDecode(px)
	case packets.Publish:
		err = cl.decodePublish(pk, px, consumed)
		if err == nil {
			atomic.AddInt64(&cl.ops.info.MessagesReceived, 1)
		}
	case packets.Puback:
		err = pk.PubackDecode(px)
	case packets.Pubrec:
		err = pk.PubrecDecode(px)
	case packets.Pubrel:
		err = pk.PubrelDecode(px)
	case packets.Pubcomp:
		err = pk.PubcompDecode(px)
	case packets.Subscribe:
		err = pk.SubscribeDecode(px)
	case packets.Suback:
		err = pk.SubackDecode(px)
	case packets.Unsubscribe:
		err = pk.UnsubscribeDecode(px)
	case packets.Unsuback:
		err = pk.UnsubackDecode(px)
	case packets.Pingreq:
	case packets.Pingresp:
	case packets.Auth:
		err = pk.AuthDecode(px)
	default:
		err = packets.ErrMalformedPacket // the reserved type 0
	}

	if err != nil {
		return packetError(&pk.FixedHeader, pk.FixedHeader.Remaining, err)
	}
	return nil
}

// consumes reports whether the PUBLISH whose body of remaining bytes is
// next to read names Options.ConsumedTopic (and fits the connection's
// buffer for those), from the start of the body, without reading it.
func (cl *Client) consumes(remaining int) bool {
	topic := cl.ops.options.ConsumedTopic
	if topic == "" || remaining > maxConsumedBuffer || remaining < 2+len(topic) {
		return false
	}
	// An error (the buffer is smaller, the connection ends) leaves the
	// read that follows to report it.
	head, err := cl.Net.bconn.Peek(2 + len(topic))
	return err == nil && publishesTo(head, topic)
}

// publishesTo reports whether body, the body of a PUBLISH (or its start),
// names topic.
func publishesTo(body []byte, topic string) bool {
	if len(body) < 2 {
		return false
	}
	n := int(body[0])<<8 | int(body[1])
	return n == len(topic) && len(body) >= 2+n && string(body[2:2+n]) == topic
}

// decodePublish decodes the body of a PUBLISH into pk. consumed says that
// body is the connection's buffer for publishes to Options.ConsumedTopic;
// their user properties then go to the connection's slice as well.
func (cl *Client) decodePublish(pk *packets.Packet, body []byte, consumed bool) error {
	if !consumed {
		return pk.PublishDecode(body)
	}
	pk.Properties.User = cl.Net.consumedUser[:0]
	err := pk.PublishDecode(body)
	if pk.Properties.User != nil {
		cl.Net.consumedUser = pk.Properties.User[:0]
	}
	if len(pk.Properties.User) == 0 {
		pk.Properties.User = nil
	}
	if err == nil && pk.Properties.TopicAliasFlag {
		// The inbound alias table keeps the topic: the packet gets
		// memory of its own.
		*pk = packets.Packet{FixedHeader: pk.FixedHeader, ProtocolVersion: pk.ProtocolVersion}
		return pk.PublishDecode(bytes.Clone(body))
	}
	return err
}

// errMessageExpired reports a message that expired before it could be
// sent; it is left out of the write.
var errMessageExpired = errors.New("message expired before it was sent")

// Write encodes pks and writes them to the client with one write, in
// order: from the client's read loop without waiting for the connection
// (what it does not take at once is queued for the client's writer), from
// any other goroutine waiting until the connection took every byte. The
// packets are changed in place as they are prepared for this client;
// nothing of them is kept. See WriteNow for a write that may leave the
// packets to its caller, and Queue for one left to the writer.
//
// dss: upstream made one write per packet (WritePacket, by value); the
// state store writes the PUBACK of a request and its response together.
func (cl *Client) Write(pks ...*packets.Packet) error {
	if cl.serving() {
		return cl.writeFromLoop(pks)
	}
	cl.awaitHeld()
	return cl.writePacketsWaiting(pks)
}

// awaitHeld waits until the client's queue holds nothing its own writes
// must not overtake (outboundQueue.held): the acknowledgements a read
// loop queued, which go out in the order of the publishes
// [MQTT-4.6.0-2], and the rest of a packet partly written; or until the
// client is closed. Its writers are at work on them: a round about to
// end, or a worker waiting for the connection. Waiting rather than
// queueing behind keeps a client that does not read from being read
// (and its acknowledgements from piling up in the queue). dss.
func (cl *Client) awaitHeld() {
	for d := 20 * time.Microsecond; cl.State.outbound.held.Load() > 0 && !cl.Closed(); d = min(2*d, 10*time.Millisecond) {
		time.Sleep(d)
	}
}

// writePacketsWaiting is Write waiting for the connection to take
// every byte, whoever else holds the client: the write loop's, which
// must not queue what it took from the queue behind what came after
// (dss).
func (cl *Client) writePacketsWaiting(pks []*packets.Packet) error {
	if cl.Closed() {
		return ErrConnectionClosed
	}

	if cl.Net.Conn == nil {
		return nil
	}

	buf := mempool.GetBuffer()
	defer mempool.PutBuffer(buf)
	sizes := make([]int, len(pks))
	encodeErr := cl.encodePackets(pks, buf, sizes)
	if buf.Len() == 0 {
		return encodeErr
	}
	data := buf.Bytes()

	n, err := func() (int, error) {
		cl.Net.writeMu.Lock()
		defer cl.Net.writeMu.Unlock()
		return cl.writeConn(data)
	}()
	if err != nil {
		return err
	}

	atomic.AddInt64(&cl.ops.info.BytesSent, int64(n))
	cl.packetsSent(pks, sizes)
	return encodeErr
}

// encodePackets appends the encoding of pks to buf and records the size
// of each in sizes, -1 for one that could not be encoded (too large for
// the client, say), which is left out. It returns the first encoding
// error.
func (cl *Client) encodePackets(pks []*packets.Packet, buf *bytes.Buffer, sizes []int) error {
	var encodeErr error
	for i := range pks {
		before := buf.Len()
		if err := cl.encodePacket(pks[i], buf); err != nil {
			buf.Truncate(before)
			sizes[i] = -1
			if encodeErr == nil {
				encodeErr = err
			}
			continue
		}
		sizes[i] = buf.Len() - before
	}
	return encodeErr
}

// packetsSent counts the messages among pks as sent; encodePackets
// recorded a negative size for those it left out.
func (cl *Client) packetsSent(pks []*packets.Packet, sizes []int) {
	for i := range pks {
		if sizes[i] >= 0 && pks[i].FixedHeader.Type == packets.Publish {
			atomic.AddInt64(&cl.ops.info.MessagesSent, 1)
		}
	}
}

// encodePacket prepares pk for this client and appends its encoding to buf.
func (cl *Client) encodePacket(pk *packets.Packet, buf *bytes.Buffer) error {
	if pk.Expires > 0 && pk.FixedHeader.Type == packets.Publish {
		// dss: the remaining time to the nanosecond; a message past its
		// expiry is not sent [MQTT-3.3.2-5], and the interval sent is the
		// remaining time in whole seconds, rounded down so that the
		// receiver does not keep it longer, at least 1 (0 would not be
		// sent, which means "does not expire") [MQTT-3.3.2-6]. It was
		// computed from whole seconds: a message with an expiry of 2 s
		// was delivered up to 2.9 s after it was published.
		left := time.Until(time.Unix(0, pk.Expires))
		if left <= 0 {
			return errMessageExpired
		}
		pk.Properties.MessageExpiryInterval = uint32(max(left/time.Second, 1))
	}

	pk.ProtocolVersion = cl.Properties.ProtocolVersion
	if pk.Mods.MaxSize == 0 { // NB we use this statement to embed client packet sizes in tests
		pk.Mods.MaxSize = cl.Properties.Props.MaximumPacketSize
	}

	if cl.Properties.Props.RequestProblemInfoFlag && cl.Properties.Props.RequestProblemInfo == 0x0 {
		// dss: but a PUBLISH: [MQTT-3.1.2-29] exempts it, and it carries
		// its User Properties unaltered [MQTT-3.3.2-17]. (CONNACK and
		// DISCONNECT may have them; upstream leaves them out.)
		if pk.FixedHeader.Type != packets.Publish {
			pk.Mods.DisallowProblemInfo = true // [MQTT-3.1.2-29] strict, no problem info on any packet if set
		}
	}

	if pk.FixedHeader.Type != packets.Connack || cl.Properties.Props.RequestResponseInfo == 0x1 || cl.ops.options.Capabilities.Compatibilities.AlwaysReturnResponseInfo {
		pk.Mods.AllowResponseInfo = true // [MQTT-3.1.2-28] we need to know which properties we can encode
	}

	before := buf.Len()
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(buf)
	case packets.Connack:
		err = pk.ConnackEncode(buf)
	case packets.Publish:
		err = pk.PublishEncode(buf)
	case packets.Puback:
		err = pk.PubackEncode(buf)
	case packets.Pubrec:
		err = pk.PubrecEncode(buf)
	case packets.Pubrel:
		err = pk.PubrelEncode(buf)
	case packets.Pubcomp:
		err = pk.PubcompEncode(buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(buf)
	case packets.Suback:
		err = pk.SubackEncode(buf)
	case packets.Unsubscribe:
		err = pk.UnsubscribeEncode(buf)
	case packets.Unsuback:
		err = pk.UnsubackEncode(buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(buf)
	case packets.Pingresp:
		err = pk.PingrespEncode(buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(buf)
	case packets.Auth:
		err = pk.AuthEncode(buf)
	default:
		err = fmt.Errorf("%w: %v", packets.ErrNoValidPacketAvailable, pk.FixedHeader.Type)
	}
	if err != nil {
		return err
	}

	if pk.Mods.MaxSize > 0 && uint32(buf.Len()-before) > pk.Mods.MaxSize {
		return packets.ErrPacketTooLarge // [MQTT-3.1.2-24] [MQTT-3.1.2-25]
	}
	return nil
}

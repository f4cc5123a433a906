// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/mqtt/packets"

	"log/slog"
)

const (
	LocalListener  = "local"
	InlineClientId = "inline"
)

var (
	ErrListenerIDExists       = errors.New("listener id already exists")                               // a listener with the same id already exists
	ErrConnectionClosed       = errors.New("connection not open")                                      // connection is closed
	ErrInlineClientNotEnabled = errors.New("please set Options.InlineClient=true to use this feature") // inline client is not enabled by default
	ErrServerClosing          = errors.New("the server is closing")
	// errSessionMoved: a delivery came to a connection whose session a
	// new connection has taken over; the session's messages are there.
	errSessionMoved = errors.New("session taken over")
)

// Capabilities indicates the capabilities and features provided by the server.
type Capabilities struct {
	MaximumClients               int64           // maximum number of connected clients
	MaximumMessageExpiryInterval int64           // maximum message expiry if message expiry is 0 or over
	MaximumClientWritesPending   int32           // maximum number of pending message writes for a client
	MaximumSessionExpiryInterval uint32          // maximum number of seconds to keep disconnected sessions
	MaximumPacketSize            uint32          // maximum packet size, no limit if 0
	maximumPacketID              uint32          // unexported, used for testing only
	ReceiveMaximum               uint16          // maximum number of concurrent qos messages per client
	MaximumInflight              uint16          // maximum number of qos > 0 messages can be stored, 0(=8192)-65535
	TopicAliasMaximum            uint16          // maximum topic alias value
	SharedSubAvailable           byte            // support of shared subscriptions
	MinimumProtocolVersion       byte            // minimum supported mqtt version
	Compatibilities              Compatibilities // version compatibilities the server provides
	MaximumQos                   byte            // maximum qos value available to clients
	RetainAvailable              byte            // support of retain messages
	WildcardSubAvailable         byte            // support of wildcard subscriptions
	SubIDAvailable               byte            // support of subscription identifiers
	// MaximumKeepalive caps the keep alive of MQTT 5 clients, in
	// seconds: one that asks for more, or for none (0), is given this as
	// Server Keep Alive in its CONNACK [MQTT-3.2.2-21]. 0: no cap. dss.
	MaximumKeepalive uint16
}

// NewDefaultServerCapabilities defines the default features and capabilities provided by the server.
func NewDefaultServerCapabilities() *Capabilities {
	return &Capabilities{
		MaximumClients:               math.MaxInt64,  // maximum number of connected clients
		MaximumMessageExpiryInterval: 60 * 60 * 24,   // maximum message expiry if message expiry is 0 or over
		MaximumClientWritesPending:   1024 * 8,       // maximum number of pending message writes for a client
		MaximumSessionExpiryInterval: math.MaxUint32, // maximum number of seconds to keep disconnected sessions
		MaximumPacketSize:            0,              // no maximum packet size
		maximumPacketID:              math.MaxUint16,
		ReceiveMaximum:               1024,           // maximum number of concurrent qos messages per client
		MaximumInflight:              1024 * 8,       // maximum number of qos > 0 messages can be stored
		TopicAliasMaximum:            math.MaxUint16, // maximum topic alias value
		SharedSubAvailable:           1,              // shared subscriptions are available
		MinimumProtocolVersion:       3,              // minimum supported mqtt version (3.0.0)
		MaximumQos:                   2,              // maximum qos value available to clients
		RetainAvailable:              1,              // retain messages is available
		WildcardSubAvailable:         1,              // wildcard subscriptions are available
		SubIDAvailable:               1,              // subscription identifiers are available
	}
}

// Compatibilities provides flags for using compatibility modes.
type Compatibilities struct {
	ObscureNotAuthorized       bool // return unspecified errors instead of not authorized
	PassiveClientDisconnect    bool // don't disconnect the client forcefully after sending disconnect packet (paho - spec violation)
	AlwaysReturnResponseInfo   bool // always return response info (useful for testing)
	NoInheritedPropertiesOnAck bool // don't allow inherited user properties on ack (paho - spec violation)
}

// Options contains configurable options for the server.
type Options struct {
	// Capabilities defines the server features and behaviour. If you only wish to modify
	// several of these values, set them explicitly - e.g.
	// 	server.Options.Capabilities.MaximumClientWritesPending = 16 * 1024
	Capabilities *Capabilities

	// ClientNetWriteBufferSize specifies the size of the client *bufio.Writer write buffer.
	ClientNetWriteBufferSize int

	// ClientNetReadBufferSize specifies the size of the client *bufio.Reader read buffer.
	ClientNetReadBufferSize int

	// Logger specifies a custom configured implementation of log/slog to override
	// the servers default logger configuration. If you wish to change the log level,
	// of the default logger, you can do so by setting:
	// server := mqtt.New(nil)
	// level := new(slog.LevelVar)
	// server.Slog = slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
	// 	Level: level,
	// }))
	// level.Set(slog.LevelDebug)
	Logger *slog.Logger

	// Enable Inline client to allow direct subscribing and publishing from the parent codebase,
	// with negligible performance difference (disabled by default to prevent confusion in statistics).
	InlineClient bool

	// ConsumedTopic names a topic whose publishes Consumer takes,
	// returning an error so that the server neither routes, retains nor
	// acknowledges them. dss: a client's publish to it (without a topic
	// alias) is decoded in buffers of its connection that the next packet
	// reuses: Consumer must copy whatever of it it keeps once
	// ConsumePublish returns.
	ConsumedTopic string

	// ReadLoops is the number of read loops (epoll, Linux only) that
	// read the TCP and Unix socket connections whose reader goroutine
	// has nothing buffered, handling the publishes to ConsumedTopic and
	// the PUBACKs they find and handing every other packet back to the
	// connection's goroutine; 0 leaves every connection to its own
	// goroutine. dss: with thousands of busy connections a goroutine
	// woken per request costs twice the CPU of a loop's turn.
	ReadLoops int

	// ConnectTimeout bounds the time a new connection has to send its
	// whole CONNECT packet; 0 waits for ever. dss: a connection that
	// never sent one (or one byte a second) was kept for good.
	ConnectTimeout time.Duration

	// PacketReadTimeout bounds the time between the bytes of a packet
	// once its first byte came, whatever the keep alive: a connection
	// whose packet stops arriving for that long is closed. 0 waits for
	// ever. dss: with keep alive 0, a PUBLISH that announced 60 MiB and
	// stopped after 4 was held for good, with the memory of what came.
	PacketReadTimeout time.Duration

	// MaxClientIDSize bounds the length of client ids, in bytes; a
	// CONNECT with a longer one is refused with CONNACK 0x85. 0 means
	// 65,535. dss: the state store's notification topics hold the client
	// id, and must fit an MQTT topic.
	MaxClientIDSize int

	// MaxPendingPerClient bounds the packets of one client that the
	// application has in hand (Client.BeginPending) before the server
	// stops reading the client's connection until it finishes one; 0
	// means no bound. dss: a client that sends requests faster than they
	// are answered is slowed by TCP back-pressure on its own connection,
	// never by making other clients wait.
	MaxPendingPerClient int32

	// MaxSubscriptionsPerClient bounds the topic filters one client's
	// session holds; a SUBSCRIBE of a new filter past it is answered
	// with reason code 0x97 (quota exceeded) for that filter. 0 means no
	// bound. dss: each filter costs memory, kept with a session that
	// outlives its connection.
	MaxSubscriptionsPerClient int

	// Access, Consumer, Sessions, Subscriptions and Retained are the
	// application's part in the broker (hooks.go); set them before
	// Serve. Without an Access, every connection is refused. dss: in
	// place of upstream's hooks.
	Access        Access
	Consumer      PublishConsumer
	Sessions      SessionEvents
	Subscriptions SubscriptionEvents
	Retained      RetainEvents

	// Remote, when set, is the rest of a cluster of brokers: told of the
	// filters with subscriptions here and of every message routed from
	// here (remote.go). dss.
	Remote Remote `yaml:"-" json:"-"`

	// MayTakeOver, when set, decides whether the connection cl may take
	// over existing, the session of the same client id (connected or
	// not): if not, cl is refused with CONNACK 0x85 and existing stays as
	// it is. It is called with the sessions locked: it must not block.
	// dss: a client id held by one principal cannot be taken over by
	// another, with the session's subscriptions and queued messages.
	MayTakeOver func(existing, cl *Client) bool

	// MaxSessionQueueBytes bounds the memory of the messages a session
	// without a connection holds, and MaxQueuedBytes that of all such
	// sessions (see queues.go); 0 means no bound. Past a bound, the
	// oldest messages never sent of the session being fed are dropped.
	// dss.
	MaxSessionQueueBytes int64
	MaxQueuedBytes       int64

	// MaxTopicLevels bounds the levels of the topics and filters clients
	// send, MaxTopicLength their bytes (see topiclevels.go); past a
	// bound they are refused before any work. 0 means
	// DefaultMaxTopicLevels and no bound on the length (but the
	// protocol's 65,535 bytes), a negative number no bound. dss.
	MaxTopicLevels int
	MaxTopicLength int

	// MaxRetained and MaxRetainedBytes bound the number and memory of
	// the retained messages (see retained.go); a client's message past
	// them is refused with 0x97. 0 means no bound. dss.
	MaxRetained      int
	MaxRetainedBytes int64
}

// Server is an MQTT broker server. It should be created with server.New()
// in order to ensure all the internal fields are correctly populated.
type Server struct {
	Options      *Options             // configurable server options
	Listeners    *listeners.Listeners // listeners are network interfaces which listen for new connections
	Clients      *Clients             // clients known to the broker
	Topics       *TopicsIndex         // an index of topic filter subscriptions and retained messages
	Info         *Info                // the counters /metrics reads (messages, bytes, clients)
	loop         *loop                // loop contains tickers for the system event loop
	done         chan bool            // indicate that the server is ending
	Log          *slog.Logger         // the core's log lines (most at debug level)
	inlineClient *Client              // inlineClient is a special client used for inline subscriptions and inline Publish
	sessionMu    sync.Mutex           // dss: serializes session takeover and the end-of-connection cleanup
	readLoops    []*readLoop          // dss: see Options.ReadLoops
	nextLoop     atomic.Uint32        // dss: the read loop of the next connection
	workers      *workerPool          // dss: see workers.go
	// Faults counts refused packets and contained panics (dss, see
	// faults.go); faultLog limits the log lines about them.
	Faults   *Faults
	faultLog *rate.Limiter
	// dropLog and unloggedDrops limit the log lines about messages
	// dropped for connected clients (dss, see drops.go).
	dropLog       *rate.Limiter
	unloggedDrops atomic.Int64
	lastDrop      atomic.Pointer[dropNote]
	// Queues accounts for the memory queued for sessions without a
	// connection (dss, see queues.go).
	Queues   *Queues
	attachMu sync.Mutex // dss: orders attachClient's ClientsWg.Add and registration before Close's Wait
	closing  bool       // guarded by attachMu
	// connecting holds the connections whose CONNECT is being read, for
	// Close to end; guarded by attachMu.
	connecting map[*Client]struct{}
	acks       *ackWaiter // dss: see AwaitAcknowledgements
}

// loop contains interval tickers for the system events loop.
type loop struct {
	clientExpiry   *time.Ticker  // interval ticker for cleaning expired clients
	inflightExpiry *time.Ticker  // interval ticker for cleaning up expired inflight messages
	retainedExpiry *time.Ticker  // interval ticker for cleaning retained messages
	willDelaySend  *time.Ticker  // interval ticker for sending Will Messages with a delay
	willDelayed    *delayedWills // activate LWT packets which will be sent after a delay

	// swept holds the clients a sweep of the event loop goes through,
	// kept from sweep to sweep (dss: the sweeps of every second copied
	// the map of clients, a map of 4,096 entries twice a second).
	swept []*Client
}

// ops contains server values which can be propagated to other structs.
type ops struct {
	options *Options     // a pointer to the server options and capabilities, for referencing in clients
	info    *Info        // pointers to server system info
	log     *slog.Logger // a structured logger for the client
	// faults and faultLog are the server's (dss, see faults.go).
	faults   *Faults
	faultLog *rate.Limiter
	// receive handles a packet the connection read after its CONNECT,
	// from its reader goroutine or its read loop's turn (dss, see
	// Client.readPacket).
	receive ReadFn
	// resume continues a connection taken back from its read loop, on
	// the caller's goroutine (dss, see Client.park).
	resume func(cl *Client, err error)
	// workers run the connections' work that has no goroutine of its
	// own (dss, see workers.go).
	workers *workerPool
}

// New returns a broker core that is ready for listeners. Optional parameters
// can be specified to override some default settings (see Options).
func New(opts *Options) *Server {
	if opts == nil {
		opts = new(Options)
	}

	opts.ensureDefaults()

	s := &Server{
		workers:   newWorkerPool(),
		done:      make(chan bool),
		Clients:   NewClients(),
		Topics:    NewTopicsIndex(),
		Listeners: listeners.New(),
		loop: &loop{
			clientExpiry:   time.NewTicker(time.Second),
			inflightExpiry: time.NewTicker(time.Second),
			retainedExpiry: time.NewTicker(time.Second),
			willDelaySend:  time.NewTicker(time.Second),
			willDelayed:    newDelayedWills(),
		},
		Options:    opts,
		Info:       &Info{},
		Log:        opts.Logger,
		Faults:     new(Faults),
		Queues:     newQueues(opts, opts.Logger),
		faultLog:   newFaultLog(),
		dropLog:    newDropLog(),
		acks:       newAckWaiter(),
		connecting: map[*Client]struct{}{},
	}
	s.Topics.remote = opts.Remote

	s.Topics.retained.maxExpiry = func() int64 { return s.Options.Capabilities.MaximumMessageExpiryInterval }

	if s.Options.InlineClient {
		s.inlineClient = s.NewClient(nil, LocalListener, InlineClientId, true)
		s.Clients.Add(s.inlineClient)
	}

	return s
}

// ensureDefaults ensures that the server starts with sane default values, if none are provided.
func (o *Options) ensureDefaults() {
	if o.Capabilities == nil {
		o.Capabilities = NewDefaultServerCapabilities()
	}

	o.Capabilities.maximumPacketID = math.MaxUint16 // spec maximum is 65535

	if o.Capabilities.MaximumInflight == 0 {
		o.Capabilities.MaximumInflight = 1024 * 8
	}

	if o.MaxTopicLevels == 0 {
		o.MaxTopicLevels = DefaultMaxTopicLevels
	}

	if o.ClientNetWriteBufferSize == 0 {
		o.ClientNetWriteBufferSize = 1024 * 2
	}

	if o.ClientNetReadBufferSize == 0 {
		o.ClientNetReadBufferSize = 1024 * 2
	}

	if o.Logger == nil {
		log := slog.New(slog.NewTextHandler(os.Stdout, nil))
		o.Logger = log
	}
}

// NewClient returns a new Client instance, populated with all the required values and
// references to be used with the server. If you are using this client to directly publish
// messages from the embedding application, set the inline flag to true to bypass ACL and
// topic validation checks.
func (s *Server) NewClient(c net.Conn, listener string, id string, inline bool) *Client {
	cl := newClient(c, &ops{ // [MQTT-3.1.2-6] implicit
		options:  s.Options,
		info:     s.Info,
		log:      s.Log,
		faults:   s.Faults,
		faultLog: s.faultLog,
		receive:  s.receivePacket,
		resume:   s.resumeClient,
		workers:  s.workers,
	})

	cl.ID = id
	cl.Net.Listener = listener
	if len(s.readLoops) > 0 && cl.Net.raw != nil {
		cl.Net.loop.loop = s.readLoops[int(s.nextLoop.Add(1))%len(s.readLoops)]
	}

	if !inline {
		cl.State.Inflight.queues = s.Queues
	}
	if inline { // inline clients bypass acl and some validity checks.
		cl.Net.Inline = true
		// By default, we don't want to restrict developer publishes,
		// but if you do, reset this after creating inline client.
		cl.State.Inflight.ResetReceiveQuota(math.MaxInt32)
	}

	return cl
}

// AddListener adds a new network listener to the server, for receiving incoming client connections.
func (s *Server) AddListener(l listeners.Listener) error {
	if _, ok := s.Listeners.Get(l.ID()); ok {
		return ErrListenerIDExists
	}

	nl := s.Log.With(slog.String("listener", l.ID()))
	err := l.Init(nl)
	if err != nil {
		return err
	}

	s.Listeners.Add(l)

	s.Log.Info("attached listener", "id", l.ID(), "protocol", l.Protocol(), "address", l.Address())
	return nil
}

// Serve starts the event loops responsible for establishing client connections
// on all attached listeners, and the sweeps of the event loop.
func (s *Server) Serve() error {
	// dss's start-up line names the build; these only trace the core.
	s.Log.Debug("mqtt core starting")
	defer s.Log.Debug("mqtt core started")

	s.startReadLoops()
	go s.eventLoop()                            // the sweeps of expired sessions, messages and wills
	s.Listeners.ServeAll(s.EstablishConnection) // start listening on all listeners.

	return nil
}

// startReadLoops starts Options.ReadLoops read loops; where they cannot
// run, every connection is read by its own goroutine.
//
// dss: see readloop.go.
func (s *Server) startReadLoops() {
	for i := 0; i < s.Options.ReadLoops; i++ {
		l, err := newReadLoop(s.Options.ClientNetReadBufferSize)
		if err != nil {
			s.Log.Warn("connections are read by a goroutine each", "error", err)
			return
		}
		s.readLoops = append(s.readLoops, l)
	}
}

// eventLoop loops forever, running various server housekeeping methods at different intervals.
func (s *Server) eventLoop() {
	s.Log.Debug("system event loop started")
	defer s.Log.Debug("system event loop halted")

	for {
		select {
		case <-s.done:
			return
		case <-s.loop.clientExpiry.C:
			s.clearExpiredClients(time.Now().Unix())
			s.flushDropLogs() // dss
		case <-s.loop.retainedExpiry.C:
			s.clearExpiredRetainedMessages(time.Now().Unix())
		case <-s.loop.willDelaySend.C:
			s.sendDelayedLWT(time.Now().Unix())
		case <-s.loop.inflightExpiry.C:
			s.clearExpiredInflights(time.Now().Unix())
		}
	}
}

// EstablishConnection establishes a new client when a listener accepts a new connection.
func (s *Server) EstablishConnection(listener string, c net.Conn) error {
	cl := s.NewClient(c, listener, "", false)
	return s.attachClient(cl, listener)
}

// attachClient validates an incoming client connection and if viable, attaches the client
// to the server, performs session housekeeping, and reads incoming packets.
//
// dss: an established connection's reading and end are serveClient's,
// which may go on on another goroutine (see Client.park): attachClient
// may return while the connection goes on.
func (s *Server) attachClient(cl *Client, listener string) error {
	// dss: Add raced with Close's Wait for a connection accepted as the
	// server closed; after Close began, a connection is refused.
	s.attachMu.Lock()
	if s.closing {
		s.attachMu.Unlock()
		cl.Stop(ErrServerClosing)
		return ErrServerClosing
	}
	s.Listeners.ClientsWg.Add(1)
	s.connecting[cl] = struct{}{}
	s.attachMu.Unlock()
	served := false // once set, endClient ends the connection
	defer func() {
		if !served {
			cl.Stop(nil)
			s.Listeners.ClientsWg.Done()
		}
	}()

	cl.startWriting()

	// dss: a connection has ConnectTimeout to send its whole CONNECT
	// (also one byte at a time); upstream waited for ever.
	if d := s.Options.ConnectTimeout; d > 0 && cl.Net.Conn != nil {
		cl.Net.deadlineAt, cl.Net.deadlineSet = time.Now().Add(d), true
		_ = cl.Net.Conn.SetDeadline(cl.Net.deadlineAt)
	}
	var pk packets.Packet
	err := s.readConnectionPacket(cl, &pk)
	s.attachMu.Lock()
	delete(s.connecting, cl)
	s.attachMu.Unlock()
	if err != nil {
		s.connectFailed(cl, pk.ProtocolVersion, err)
		return fmt.Errorf("read connection: %w", err)
	}

	cl.ParseConnect(listener, &pk)
	if atomic.LoadInt64(&s.Info.ClientsConnected) >= s.Options.Capabilities.MaximumClients {
		if cl.Properties.ProtocolVersion < 5 {
			s.SendConnack(cl, packets.ErrServerUnavailable, false, nil)
		} else {
			s.SendConnack(cl, packets.ErrServerBusy, false, nil)
		}

		return packets.ErrServerBusy
	}

	code := s.validateConnect(cl, &pk) // [MQTT-3.1.4-1] [MQTT-3.1.4-2]
	if code != packets.CodeSuccess {
		if err := s.SendConnack(cl, code, false, nil); err != nil {
			return fmt.Errorf("invalid connection send ack: %w", err)
		}
		return code // [MQTT-3.2.2-7] [MQTT-3.1.4-6]
	}

	if s.Options.Access == nil { // [MQTT-3.1.4-2]
		err = packets.ErrBadUsernameOrPassword
	} else {
		err = s.Options.Access.Connect(cl, &pk)
	}
	if err != nil {
		// dss: an Access that refuses with a reason code has it sent in the
		// CONNACK; the client learns why (bad credentials, not
		// authorized) instead of seeing the connection drop.
		if code, ok := err.(packets.Code); ok && code.Code >= packets.ErrUnspecifiedError.Code {
			if err := s.SendConnack(cl, code, false, nil); err != nil {
				return fmt.Errorf("refused connection send ack: %w", err)
			}
		}
		return err
	}

	cl.Net.deadlineSet = false // the keepalive's deadline replaces the CONNECT's
	cl.Net.src.packetTimeout, cl.Net.src.packetDeadline = 0, false
	cl.refreshDeadline(cl.State.Keepalive)
	if cl.Net.Conn != nil {
		// dss: from here on, a deadline past while the client's bytes
		// wait in the socket is the server's lateness, not the client's
		// (the CONNECT's deadline bounds the whole CONNECT).
		cl.Net.src.stillSending = cl.stillSending
	}

	// dss: a Will is a publish like any other, checked like one before
	// the connection is accepted (and again when it is sent); upstream
	// never checked it, so a client could publish through its Will where
	// it may not publish. A Will cannot be a publish the application
	// consumes (see willConsumed).
	if atomic.LoadUint32(&cl.Properties.Will.Flag) == 1 && (s.willConsumed(cl.Properties.Will.TopicName) ||
		!s.Options.allowed(cl, cl.Properties.Will.TopicName, true)) {
		if err := s.SendConnack(cl, packets.ErrNotAuthorized, false, nil); err != nil {
			return fmt.Errorf("refused will send ack: %w", err)
		}
		return packets.ErrNotAuthorized
	}

	atomic.AddInt64(&s.Info.ClientsConnected, 1)
	defer func() {
		if !served {
			atomic.AddInt64(&s.Info.ClientsConnected, -1)
		}
	}()

	if ev := s.Options.Sessions; ev != nil {
		ev.SessionEstablishing(cl, &pk)
	}

	// dss: the takeover of an earlier connection with the same client id
	// and that connection's own cleanup (below) are serialized, so that
	// the cleanup cannot remove the new connection's subscriptions or its
	// entry in the client list. The old connection is told to go only
	// after the new one is registered.
	s.sessionMu.Lock()
	if existing, ok := s.Clients.Get(cl.ID); ok && s.Options.MayTakeOver != nil && !s.Options.MayTakeOver(existing, cl) {
		s.sessionMu.Unlock()
		s.Log.Warn("session takeover refused", "client", cl.ID, "remote", cl.Net.Remote, "listener", cl.Net.Listener)
		if err := s.SendConnack(cl, packets.ErrClientIdentifierNotValid, false, nil); err != nil {
			return fmt.Errorf("refused takeover send ack: %w", err)
		}
		return packets.ErrClientIdentifierNotValid
	}
	// dss: a connection that registers once Close began is not among the
	// clients Close disconnects, and Close would wait for it as long as
	// the client stays: it is refused. The check and the registration
	// are one step for Close (attachMu), which sets closing before it
	// lists the clients.
	s.attachMu.Lock()
	if s.closing {
		s.attachMu.Unlock()
		s.sessionMu.Unlock()
		_ = s.SendConnack(cl, packets.ErrServerUnavailable, false, nil)
		return ErrServerClosing
	}
	cl.State.awaitingConnack = true // not yet reachable by a delivery
	sessionPresent, takenOver := s.inheritClientSession(&pk, cl)
	s.Clients.Add(cl) // [MQTT-4.1.0-1]
	s.attachMu.Unlock()
	s.sessionMu.Unlock()
	if takenOver != nil {
		_ = s.DisconnectClient(takenOver, packets.ErrSessionTakenOver) // [MQTT-3.1.4-3]
	}

	// dss: a message routed to the connection before its CONNACK is
	// queued, and sent after it with the session's messages; upstream
	// could write it before the CONNACK.
	//
	// The CONNACK is written under the handover lock: a QoS 0 delivery,
	// which is dropped while the CONNACK is awaited, waits for it instead
	// of falling between its write and the end of the wait (a message
	// published after the client had its CONNACK was now and then lost).
	cl.State.handover.Lock()
	err = s.SendConnack(cl, code, sessionPresent, nil) // [MQTT-3.1.4-5] [MQTT-3.2.0-1] [MQTT-3.2.0-2] &[MQTT-3.14.0-1]
	cl.State.awaitingConnack = false
	cl.State.handover.Unlock()
	if err != nil {
		return fmt.Errorf("ack connection packet: %w", err)
	}

	s.loop.willDelayed.Delete(cl.ID) // [MQTT-3.1.3-9]

	if sessionPresent || cl.State.Inflight.Len() > 0 {
		err = cl.ResendInflightMessages(true)
		if err != nil {
			return fmt.Errorf("resend inflight: %w", err)
		}
	}

	if ev := s.Options.Sessions; ev != nil {
		ev.SessionEstablished(cl)
	}

	served = true
	return s.serveClient(cl)
}

// serveClient reads the established connection's packets until it ends,
// and ends it; or until the connection parks in a read loop, which
// continues it (resumeClient) on another goroutine, and returns nil.
func (s *Server) serveClient(cl *Client) error {
	err := s.readClient(cl)
	if err == errParked {
		return nil
	}
	return s.endClient(cl, err)
}

// resumeClient continues a connection taken back from its read loop,
// on the caller's goroutine: err is what ended it while it was parked,
// if anything did.
func (s *Server) resumeClient(cl *Client, err error) {
	if err == nil {
		_ = s.serveClient(cl)
		return
	}
	_ = s.endClient(cl, err)
}

// endClient ends the established connection, whose packets could not be
// read any further because of err (nil: it ended as it should), and
// returns the error it ended with.
func (s *Server) endClient(cl *Client, err error) error {
	defer s.Listeners.ClientsWg.Done()
	defer cl.Stop(nil)
	defer atomic.AddInt64(&s.Info.ClientsConnected, -1)

	if code, ok := cl.StopCause().(packets.Code); err == nil && ok && code.Code >= packets.ErrUnspecifiedError.Code {
		// dss: the server ended the connection with a DISCONNECT; the
		// reader may have seen that before its read failed. The will is
		// sent either way [MQTT-3.1.2-8].
		err = code
	}
	if err != nil {
		s.readFailed(cl, err)
		s.sendLWT(cl)
		cl.Stop(err)
	} else {
		cl.Properties.Will = Will{} // [MQTT-3.14.4-3] [MQTT-3.1.2-10]
	}
	s.Log.Debug("client disconnected", "error", err, "client", cl.ID, "remote", cl.Net.Remote, "listener", cl.Net.Listener)

	expire := (cl.Properties.ProtocolVersion == 5 && cl.Properties.Props.SessionExpiryInterval == 0) || (cl.Properties.ProtocolVersion < 5 && cl.Properties.Clean)
	if ev := s.Options.Sessions; ev != nil {
		ev.Disconnected(cl, err, expire)
	}
	s.acks.signal() // dss: nothing of this connection is awaited any more

	s.sessionMu.Lock()
	var dropped []droppedMessage
	if expire && !cl.IsTakenOver() {
		cl.ClearInflights()
		s.UnsubscribeClient(cl)
		s.Clients.Delete(cl.ID) // [MQTT-4.1.0-2] ![MQTT-3.1.2-23]
	} else if !cl.IsTakenOver() {
		dropped = cl.State.Inflight.goOffline() // dss: its messages are queued now
	}
	s.sessionMu.Unlock()
	s.queuedDropped(cl, dropped)

	cl.closeLingering() // dss: after a DISCONNECT from the server
	cl.State.retained.wait()

	return err
}

// readConnectionPacket reads the first incoming header for a connection, and if
// acceptable, returns the valid connection packet.
func (s *Server) readConnectionPacket(cl *Client, pk *packets.Packet) error {
	var fh packets.FixedHeader
	if err := cl.ReadFixedHeader(&fh); err != nil {
		return err
	}

	if fh.Type != packets.Connect {
		return packets.ErrProtocolViolationRequireFirstConnect // [MQTT-3.1.0-1]
	}

	return cl.ReadPacket(&fh, pk)
}

// receivePacket processes an incoming packet for a client, and issues a disconnect to the client
// if an error has occurred (if mqtt v5). Every packet a connection reads
// after its CONNECT comes here, from its reader goroutine or its read
// loop's turn (see Client.readPacket); pk is valid until it returns.
func (s *Server) receivePacket(cl *Client, pk *packets.Packet) error {
	err := s.processPacket(cl, pk)
	if err != nil {
		return s.packetFailed(cl, pk, err)
	}

	return nil
}

// packetFailed ends the processing of a packet that failed with err: a
// failure code is sent to an MQTT 5 client as a DISCONNECT. It returns
// err.
func (s *Server) packetFailed(cl *Client, pk *packets.Packet, err error) error {
	if code, ok := err.(packets.Code); ok &&
		cl.Properties.ProtocolVersion == 5 &&
		code.Code >= packets.ErrUnspecifiedError.Code {
		_ = s.DisconnectClient(cl, code)
	}
	if code, ok := err.(packets.Code); ok && (code.Code == packets.ErrMalformedPacket.Code || code.Code == packets.ErrProtocolViolation.Code) {
		s.Faults.RefusedPackets.Add(1)
	}

	s.logPacketError(cl, pk, err)

	return err
}

// logPacketError logs a packet that could not be processed.
func (s *Server) logPacketError(cl *Client, pk *packets.Packet, err error) {
	// dss: the packet was logged whole (its payload, a CONNECT's
	// password); now one line with its type and sizes, rate limited.
	if s.faultLog.Allow() {
		s.Log.Warn("error processing packet", "error", err, "client", cl.ID, "remote", cl.Net.Remote,
			"listener", cl.Net.Listener, "type", packetName(pk.FixedHeader.Type), "bytes", pk.FixedHeader.Remaining)
	}
}

// validateConnect validates that a connect packet is compliant.
func (s *Server) validateConnect(cl *Client, pk *packets.Packet) packets.Code {
	code := pk.ConnectValidate() // [MQTT-3.1.4-1] [MQTT-3.1.4-2]
	if code != packets.CodeSuccess {
		return code
	}

	if cl.Properties.ProtocolVersion < 5 && !pk.Connect.Clean && pk.Connect.ClientIdentifier == "" {
		return packets.ErrUnspecifiedError
	}

	if s.Options.MaxClientIDSize > 0 && len(pk.Connect.ClientIdentifier) > s.Options.MaxClientIDSize {
		return packets.ErrClientIdentifierNotValid // dss
	}

	// dss: enhanced authentication (AUTH) is not supported, so a CONNECT
	// that names an Authentication Method is refused and its connection
	// closed [MQTT-4.12.0-1]; upstream went on as if it named none.
	if cl.Properties.ProtocolVersion == 5 && pk.Properties.AuthenticationMethod != "" {
		return packets.ErrBadAuthenticationMethod
	}

	if pk.Connect.WillFlag && s.Options.topicBeyondLimits(pk.Connect.WillTopic) {
		s.Faults.RefusedTopics.Add(1)
		return packets.ErrTopicNameInvalid // dss: a Will is a publish
	}

	if cl.Properties.ProtocolVersion < s.Options.Capabilities.MinimumProtocolVersion {
		return packets.ErrUnsupportedProtocolVersion // [MQTT-3.1.2-2]
	} else if cl.Properties.Will.Qos > s.Options.Capabilities.MaximumQos {
		return packets.ErrQosNotSupported // [MQTT-3.2.2-12]
	} else if cl.Properties.Will.Retain && s.Options.Capabilities.RetainAvailable == 0x00 {
		return packets.ErrRetainNotSupported // [MQTT-3.2.2-13]
	}

	return code
}

// inheritClientSession inherits the state of an existing client sharing the same
// connection ID. If clean is true, the state of any previously existing client
// session is abandoned.
//
// dss: it is called with sessionMu held and returns the connection taken
// over, for the caller to disconnect once the new one is registered.
func (s *Server) inheritClientSession(pk *packets.Packet, cl *Client) (bool, *Client) {
	if existing, ok := s.Clients.Get(cl.ID); ok {
		if pk.Connect.Clean || (existing.Properties.Clean && existing.Properties.ProtocolVersion < 5) { // [MQTT-3.1.2-4] [MQTT-3.1.4-4]
			s.UnsubscribeClient(existing)
			existing.ClearInflights()
			existing.State.Inflight.detach()
			existing.State.isTakenOver.Store(true) // only set isTakenOver after unsubscribe has occurred
			return false, existing                 // [MQTT-3.2.2-3]
		}

		// dss: no delivery adds to the old connection's messages once
		// they are cloned: one that comes later goes to the new
		// connection (see errSessionMoved). Upstream's could land in the
		// old connection's messages after the clone, and was lost.
		existing.State.handover.Lock()
		existing.State.isTakenOver.Store(true)
		if existing.State.Inflight.Len() > 0 {
			cl.State.Inflight = existing.State.Inflight.Clone() // [MQTT-3.1.2-5]
			if cl.State.Inflight.maximumReceiveQuota == 0 && cl.ops.options.Capabilities.ReceiveMaximum != 0 {
				cl.State.Inflight.ResetReceiveQuota(int32(cl.ops.options.Capabilities.ReceiveMaximum)) // server receive max per client
				cl.State.Inflight.ResetSendQuota(cl.sendWindow())                                      // client receive max
			}
		}
		existing.State.successor.Store(cl)
		existing.State.handover.Unlock()

		for _, sub := range existing.State.Subscriptions.GetAll() {
			// dss: an inherited subscription is checked as a new one
			// would be: the new connection may not be allowed what the
			// old one was.
			if !s.Options.allowed(cl, sub.Filter, false) {
				s.Log.Debug("inherited subscription not authorized", "client", cl.ID, "filter", sub.Filter)
				continue
			}
			existed := !s.Topics.Subscribe(cl.ID, sub) // [MQTT-3.8.4-3]
			if !existed {
				atomic.AddInt64(&s.Info.Subscriptions, 1)
			}
			cl.State.Subscriptions.Add(sub.Filter, sub)
		}

		// Clean the state of the existing client to prevent sequential take-overs
		// from increasing memory usage by inflights + subs * client-id.
		s.UnsubscribeClient(existing)
		existing.ClearInflights()
		existing.State.Inflight.detach() // dss: what reaches it still no longer counts

		s.Log.Debug("session taken over", "client", cl.ID, "old_remote", existing.Net.Remote, "new_remote", cl.Net.Remote)

		return true, existing // [MQTT-3.2.2-3]
	}

	return false, nil // [MQTT-3.2.2-2]
}

// SendConnack returns a Connack packet to a client.
func (s *Server) SendConnack(cl *Client, reason packets.Code, present bool, properties *packets.Properties) error {
	if properties == nil {
		properties = &packets.Properties{
			ReceiveMaximum: s.Options.Capabilities.ReceiveMaximum,
		}
	}

	properties.ReceiveMaximum = s.Options.Capabilities.ReceiveMaximum // 3.2.2.3.3 Receive Maximum
	if cl.State.ServerKeepalive {                                     // Access.Connect may set it.
		properties.ServerKeepAlive = cl.State.Keepalive // [MQTT-3.1.2-21]
		properties.ServerKeepAliveFlag = true
	}

	if reason.Code >= packets.ErrUnspecifiedError.Code {
		if cl.Properties.ProtocolVersion < 5 {
			if v3reason, ok := packets.V5CodesToV3[reason]; ok { // NB v3 3.2.2.3 Connack return codes
				reason = v3reason
			}
		}

		properties.ReasonString = reason.Reason
		ack := packets.Packet{
			FixedHeader: packets.FixedHeader{
				Type: packets.Connack,
			},
			SessionPresent: false,       // [MQTT-3.2.2-6]
			ReasonCode:     reason.Code, // [MQTT-3.2.2-8]
			Properties:     *properties,
		}
		return cl.WritePacket(ack)
	}

	if s.Options.Capabilities.MaximumQos < 2 {
		properties.MaximumQos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9]
		properties.MaximumQosFlag = true
	}
	announceCapabilities(s.Options.Capabilities, properties)

	if cl.Properties.Props.AssignedClientID != "" {
		properties.AssignedClientID = cl.Properties.Props.AssignedClientID // [MQTT-3.1.3-7] [MQTT-3.2.2-16]
	}

	if cl.Properties.Props.SessionExpiryInterval > s.Options.Capabilities.MaximumSessionExpiryInterval {
		properties.SessionExpiryInterval = s.Options.Capabilities.MaximumSessionExpiryInterval
		properties.SessionExpiryIntervalFlag = true
		cl.Properties.Props.SessionExpiryInterval = properties.SessionExpiryInterval
		cl.Properties.Props.SessionExpiryIntervalFlag = true
	}

	ack := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: packets.Connack,
		},
		SessionPresent: present,
		ReasonCode:     reason.Code, // [MQTT-3.2.2-8]
		Properties:     *properties,
	}
	return cl.WritePacket(ack)
}

// announceCapabilities sets the properties of a successful CONNACK that
// announce caps: the maximum packet size the server accepts
// [MQTT-3.2.2-15], the topic aliases a client may use (absent: none
// [MQTT-3.2.2-17, -18]), and, when not available, retained messages,
// wildcard subscriptions, subscription identifiers and shared
// subscriptions (absent means available).
//
// dss: upstream announced none of them, though it enforced some.
func announceCapabilities(caps *Capabilities, properties *packets.Properties) {
	properties.MaximumPacketSize = caps.MaximumPacketSize
	properties.TopicAliasMaximum = caps.TopicAliasMaximum
	if caps.RetainAvailable == 0 {
		properties.RetainAvailable, properties.RetainAvailableFlag = 0, true
	}
	if caps.WildcardSubAvailable == 0 {
		properties.WildcardSubAvailable, properties.WildcardSubAvailableFlag = 0, true
	}
	if caps.SubIDAvailable == 0 {
		properties.SubIDAvailable, properties.SubIDAvailableFlag = 0, true
	}
	if caps.SharedSubAvailable == 0 {
		properties.SharedSubAvailable, properties.SharedSubAvailableFlag = 0, true
	}
}

// processPacket processes an inbound packet for a client. Since the method is
// typically called as a goroutine, errors are primarily for test checking purposes.
func (s *Server) processPacket(cl *Client, pk *packets.Packet) error {
	var err error

	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = s.processConnect(cl, pk)
	case packets.Disconnect:
		err = s.processDisconnect(cl, pk)
	case packets.Pingreq:
		err = s.processPingreq(cl, pk)
	case packets.Publish:
		code := pk.PublishValidate(s.Options.Capabilities.TopicAliasMaximum)
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processPublish(cl, pk)
	case packets.Puback:
		err = s.processPuback(cl, pk)
	case packets.Pubrec:
		err = s.processPubrec(cl, pk)
	case packets.Pubrel:
		err = s.processPubrel(cl, pk)
	case packets.Pubcomp:
		err = s.processPubcomp(cl, pk)
	case packets.Subscribe:
		code := pk.SubscribeValidate()
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processSubscribe(cl, pk)
	case packets.Unsubscribe:
		code := pk.UnsubscribeValidate()
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processUnsubscribe(cl, pk)
	case packets.Auth:
		code := pk.AuthValidate()
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processAuth(cl, pk)
	default:
		return fmt.Errorf("no valid packet available; %v", pk.FixedHeader.Type)
	}

	if err != nil {
		return err
	}

	if atomic.LoadInt32(&cl.State.Inflight.sendQuota) > 0 {
		s.sendParked(cl)
	}

	return nil
}

// sendParked sends the next packet parked for lack of send quota, if any.
func (s *Server) sendParked(cl *Client) {
	if !cl.State.Inflight.HasParked() {
		return
	}
	s.releaseParked(cl)
}

// releaseParked sends cl's parked messages, oldest first, as far as its
// send quota goes. They go through cl's write loop, after what it holds
// (they are newer), and one goroutine at a time releases: a publisher
// whose message was parked behind them may release them too (see
// holdDelivery), and no message may be released twice.
//
// dss: one message was released per packet the client sent, written at
// once past the write loop's queue; a message parked behind others while
// the quota had room then waited for the client's next packet.
func (s *Server) releaseParked(cl *Client) {
	inf := cl.State.Inflight
	for inf.HasParked() && atomic.LoadInt32(&inf.sendQuota) > 0 {
		if !cl.State.flow.releasing.TryLock() {
			return // its holder looks again once it lets go
		}
		for atomic.LoadInt32(&inf.sendQuota) > 0 {
			next, ok := inf.NextImmediate()
			if !ok {
				break
			}
			// dss: the packet was deleted from the inflight map once
			// written, so its PUBACK found nothing and the send quota
			// it took was never given back: after Receive Maximum such
			// releases every later message to the client stayed
			// parked. It now stays inflight, no longer parked, until
			// its PUBACK.
			next.Expiry = 0
			inf.Set(&next)
			inf.DecreaseSendQuota()
			out := new(packets.Packet)
			*out = next
			_ = s.enqueue(cl, out, nil)
		}
		cl.State.flow.releasing.Unlock()
	}
}

// processConnect processes a Connect packet. The packet cannot be used to establish
// a new connection on an existing connection. See EstablishConnection instead.
func (s *Server) processConnect(cl *Client, _ *packets.Packet) error {
	s.sendLWT(cl)
	return packets.ErrProtocolViolationSecondConnect // [MQTT-3.1.0-2]
}

// processPingreq processes a Pingreq packet.
//
// dss: not inlined into processPacket: the PINGRESP it writes (800
// bytes) would be in the frame of every packet processed.
//
//go:noinline
func (s *Server) processPingreq(cl *Client, _ *packets.Packet) error {
	return cl.WritePacket(packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: packets.Pingresp, // [MQTT-3.12.4-1]
		},
	})
}

// Publish publishes a publish packet into the broker as if it were sent from the specified client.
// This is a convenience function which wraps InjectPacket. As such, this method can publish packets
// to any topic (including $SYS) and bypass ACL checks. The qos byte is used for limiting the
// outbound qos (mqtt v5) rather than issuing to the broker (we assume qos 2 complete).
func (s *Server) Publish(topic string, payload []byte, retain bool, qos byte) error {
	if !s.Options.InlineClient {
		return ErrInlineClientNotEnabled
	}

	return s.InjectPacket(s.inlineClient, packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type:   packets.Publish,
			Qos:    qos,
			Retain: retain,
		},
		TopicName: topic,
		Payload:   payload,
		PacketID:  uint16(qos), // we never process the inbound qos, but we need a packet id for validity checks.
	})
}

// Subscribe adds an inline subscription for the specified topic filter and subscription identifier
// with the provided handler function.
func (s *Server) Subscribe(filter string, subscriptionId int, handler InlineSubFn) error {
	if !s.Options.InlineClient {
		return ErrInlineClientNotEnabled
	}

	if handler == nil {
		return packets.ErrInlineSubscriptionHandlerInvalid
	}

	if !IsValidFilter(filter, false) {
		return packets.ErrTopicFilterInvalid
	}

	subscription := packets.Subscription{
		Identifier: subscriptionId,
		Filter:     filter,
	}

	pk := packets.Packet{ // subscribe like a normal client.
		Origin:      s.inlineClient.ID,
		FixedHeader: packets.FixedHeader{Type: packets.Subscribe},
		Filters:     packets.Subscriptions{subscription},
	}

	inlineSubscription := InlineSubscription{
		Subscription: subscription,
		Handler:      handler,
	}

	s.Topics.InlineSubscribe(inlineSubscription)
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Subscribed(s.inlineClient, &pk, []byte{packets.CodeSuccess.Code})
	}

	// Handling retained messages.
	for _, pkv := range s.Topics.Messages(filter) { // [MQTT-3.8.4-4]
		handler(s.inlineClient, inlineSubscription.Subscription, pkv)
	}
	return nil
}

// Unsubscribe removes an inline subscription for the specified subscription and topic filter.
// It allows you to unsubscribe a specific subscription from the internal subscription
// associated with the given topic filter.
func (s *Server) Unsubscribe(filter string, subscriptionId int) error {
	if !s.Options.InlineClient {
		return ErrInlineClientNotEnabled
	}

	if !IsValidFilter(filter, false) {
		return packets.ErrTopicFilterInvalid
	}

	pk := packets.Packet{
		Origin:      s.inlineClient.ID,
		FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe},
		Filters: packets.Subscriptions{
			{
				Identifier: subscriptionId,
				Filter:     filter,
			},
		},
	}

	s.Topics.InlineUnsubscribe(subscriptionId, filter)
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(s.inlineClient, &pk)
	}
	return nil
}

// InjectPacket injects a packet into the broker as if it were sent from the specified client.
// InlineClients using this method can publish packets to any topic (including $SYS) and bypass ACL checks.
// pk is a copy: processing changes the packet it handles, and the
// caller's stays as it was.
func (s *Server) InjectPacket(cl *Client, pk packets.Packet) error {
	pk.ProtocolVersion = cl.Properties.ProtocolVersion

	err := s.processPacket(cl, &pk)
	if err != nil {
		return err
	}

	if pk.FixedHeader.Type == packets.Publish {
		atomic.AddInt64(&cl.ops.info.MessagesReceived, 1)
	}

	return nil
}

// processPublish processes a Publish packet.
//
// dss: every publish, a request to Options.ConsumedTopic as any other, is
// handed by pointer to Options.Consumer, if there is one.
func (s *Server) processPublish(cl *Client, pk *packets.Packet) error {
	if done, err := s.admitPublish(cl, pk); done {
		return err
	}

	var err error
	if c := s.Options.Consumer; c != nil {
		err = c.ConsumePublish(cl, pk)
	}
	return s.publishOutcome(cl, pk, err)
}

// admitPublish makes the checks and changes every publish gets before
// Options.Consumer sees it. It reports done when the publish ends there,
// with the error to return.
func (s *Server) admitPublish(cl *Client, pk *packets.Packet) (bool, error) {
	if !cl.Net.Inline && !IsValidFilter(pk.TopicName, true) {
		// dss: refused as its QoS asks [MQTT-3.3.4-1]; upstream dropped it
		// without the PUBACK or PUBREC a QoS 1 or 2 publisher waits for.
		return true, s.refusePublishWith(cl, pk, packets.ErrTopicNameInvalid)
	}

	if atomic.LoadInt32(&cl.State.Inflight.receiveQuota) == 0 {
		return true, s.DisconnectClient(cl, packets.ErrReceiveMaximum) // ~[MQTT-3.3.4-7] ~[MQTT-3.3.4-8]
	}

	if code := s.beyondCapabilities(cl, pk); code != packets.CodeSuccess {
		return true, code
	}

	// dss: a topic past the bounds of levels or length is refused before
	// anything is done with it (the alias table does not keep it either).
	if !cl.Net.Inline && s.Options.topicBeyondLimits(pk.TopicName) {
		s.Faults.RefusedTopics.Add(1)
		return true, s.refusePublishWith(cl, pk, packets.ErrTopicNameInvalid)
	}

	// dss: the topic an alias stands for is resolved before the ACL
	// check, which judged the empty topic of a publish through an alias
	// (refusing it under a policy, or admitting it to a topic no longer
	// granted when the grants narrowed).
	if pk.Properties.TopicAliasFlag && pk.Properties.TopicAlias > 0 { // [MQTT-3.3.2-12]
		var known bool
		pk.TopicName, known = cl.State.TopicAliases.Inbound.Set(pk.Properties.TopicAlias, pk.TopicName)
		if !known {
			// dss: an alias this connection never set (aliases last one
			// connection [MQTT-3.3.2-7]) with an empty topic is a Protocol
			// Error (3.3.4).
			return true, packets.ErrProtocolViolationUnknownTopicAlias
		}
	}

	if !cl.Net.Inline && !s.Options.allowed(cl, pk.TopicName, true) {
		return true, s.publishDenied(cl, pk)
	}

	pk.Origin = cl.ID
	now := time.Now()
	pk.Created = now.Unix()

	if expiry := minimum(s.Options.Capabilities.MaximumMessageExpiryInterval,
		int64(pk.Properties.MessageExpiryInterval)); expiry > 0 {
		pk.Expiry = pk.Created + expiry
	}
	s.setExpires(pk, now)

	if !cl.Net.Inline && cl.State.Inflight.HasInbound(pk.PacketID) {
		if done, err := s.publishIDInFlight(cl, pk); done {
			return true, err
		}
	}

	if pk.FixedHeader.Qos > s.Options.Capabilities.MaximumQos {
		pk.FixedHeader.Qos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9] Reduce qos based on server max qos capability
	}
	return false, nil
}

// setExpires sets when pk, published at now, expires, if its publisher
// gave it a Message Expiry Interval (at most the server's maximum).
//
// dss: Expiry, in whole seconds and set for every message (the server's
// maximum applies to all), bounds how long the server keeps a message;
// Expires is the publisher's expiry to the nanosecond, which decides
// whether the message may still be sent and the interval it is sent with
// [MQTT-3.3.2-5] [MQTT-3.3.2-6].
func (s *Server) setExpires(pk *packets.Packet, now time.Time) {
	interval := int64(pk.Properties.MessageExpiryInterval)
	if interval == 0 {
		return
	}
	if limit := s.Options.Capabilities.MaximumMessageExpiryInterval; limit > 0 && interval > limit {
		interval = limit
	}
	pk.Expires = now.Add(time.Duration(interval) * time.Second).UnixNano()
}

// beyondCapabilities returns the reason code that refuses a publish of an
// MQTT 5 client that the server announced it does not take: a QoS above
// Maximum QoS (0x9B), or the RETAIN flag when retained messages are not
// available (0x9A). The connection then ends with DISCONNECT and the code
// (MQTT 5, 3.2.2.3.4 and 3.2.2.3.5). An MQTT 3.1.1 client, told nothing,
// has its QoS lowered and its message not retained.
//
// dss: upstream lowered the QoS and dropped the retained flag silently
// for every client.
func (s *Server) beyondCapabilities(cl *Client, pk *packets.Packet) packets.Code {
	if cl.Net.Inline || cl.Properties.ProtocolVersion < 5 {
		return packets.CodeSuccess
	}
	if pk.FixedHeader.Qos > s.Options.Capabilities.MaximumQos {
		return packets.ErrQosNotSupported
	}
	if pk.FixedHeader.Retain && s.Options.Capabilities.RetainAvailable == 0 {
		return packets.ErrRetainNotSupported
	}
	return packets.CodeSuccess
}

// publishOutcome ends a publish as Options.Consumer decided with err:
// rejected, refused with a reason code, or accepted (and routed, unless
// ignored).
func (s *Server) publishOutcome(cl *Client, pk *packets.Packet, err error) error {
	switch {
	case err == nil:
	case errors.Is(err, errRejectPacket):
		return nil
	case errors.Is(err, errSuccessIgnore):
		pk.Ignore = true
	case cl.Properties.ProtocolVersion == 5 && pk.FixedHeader.Qos > 0 && errors.As(err, new(packets.Code)):
		return s.refusePublish(cl, pk, packets.Puback, err.(packets.Code))
	}

	return s.publishAccepted(cl, pk)
}

// publishDenied answers a publish the ACL denies.
func (s *Server) publishDenied(cl *Client, pk *packets.Packet) error {
	return s.refusePublishWith(cl, pk, packets.ErrNotAuthorized)
}

// refusePublishWith refuses a publish with code: a QoS 0 publish is
// dropped, a QoS 1 or 2 publish of an MQTT 5 client acknowledged with
// code, and an MQTT 3.1.1 client, which acknowledgements cannot tell,
// disconnected.
func (s *Server) refusePublishWith(cl *Client, pk *packets.Packet, code packets.Code) error {
	if pk.FixedHeader.Qos == 0 {
		return nil
	}

	if cl.Properties.ProtocolVersion != 5 {
		return s.DisconnectClient(cl, code)
	}

	ackType := packets.Puback
	if pk.FixedHeader.Qos == 2 {
		ackType = packets.Pubrec
	}
	return s.refusePublish(cl, pk, ackType, code)
}

// refusePublish acknowledges a publish with an acknowledgement of type
// ackType and a failure code.
func (s *Server) refusePublish(cl *Client, pk *packets.Packet, ackType byte, code packets.Code) error {
	return cl.WritePacket(s.buildAck(pk.PacketID, ackType, 0, pk.Properties, code))
}

// publishIDInFlight handles a publish whose packet id the client's
// earlier QoS 2 publish still holds: the same QoS 2 publish sent again
// before its PUBREL is acknowledged again and not delivered again; any
// other publish with that id is refused. Anything else the client's id
// holds is dropped. It reports whether the publish is done with.
//
// dss: only the client's own packet ids count here; the server's
// messages in flight have ids of their own [MQTT-2.2.1]. And a QoS 2
// publish sent again got PUBREC 0x91, which tells the client the message
// was not accepted when it was.
func (s *Server) publishIDInFlight(cl *Client, pk *packets.Packet) (bool, error) {
	pki, ok := cl.State.Inflight.GetInbound(pk.PacketID)
	if !ok {
		return false, nil
	}
	if pki.FixedHeader.Type == packets.Pubrec {
		code := packets.ErrPacketIdentifierInUse
		if pk.FixedHeader.Qos == 2 {
			code = packets.CodeSuccess // [MQTT-4.3.3-10]
		}
		ack := s.buildAck(pk.PacketID, packets.Pubrec, 0, pk.Properties, code)
		return true, cl.WritePacket(ack)
	}
	if ok := cl.State.Inflight.DeleteInbound(pk.PacketID); ok { // [MQTT-4.3.2-5]
		atomic.AddInt64(&s.Info.Inflight, -1)
	}
	return false, nil
}

// publishAccepted retains, acknowledges and routes a publish the
// consumer let through.
func (s *Server) publishAccepted(cl *Client, pk *packets.Packet) error {
	if pk.FixedHeader.Retain && !s.retainMessage(cl, pk) { // [MQTT-3.3.1-5] ![MQTT-3.3.1-8]
		// dss: past the bounds of retained messages, the message is
		// refused whole: neither retained nor routed.
		return s.refusePublishWith(cl, pk, packets.ErrQuotaExceeded)
	}

	// If it's inlineClient, it can't handle PUBREC and PUBREL.
	// When it publishes a package with a qos > 0, the server treats
	// the package as qos=0, and the client receives it as qos=1 or 2.
	if pk.FixedHeader.Qos == 0 || cl.Net.Inline {
		s.publishToSubscribers(*pk)
		return nil
	}

	cl.State.Inflight.DecreaseReceiveQuota()
	ack := s.buildAck(pk.PacketID, packets.Puback, 0, pk.Properties, packets.QosCodes[pk.FixedHeader.Qos]) // [MQTT-4.3.2-4]
	if pk.FixedHeader.Qos == 2 {
		ack = s.buildAck(pk.PacketID, packets.Pubrec, 0, pk.Properties, packets.CodeSuccess) // [MQTT-3.3.4-1] [MQTT-4.3.3-8]
	}

	if ok := cl.State.Inflight.Set(&ack); ok {
		atomic.AddInt64(&s.Info.Inflight, 1)
	}

	// dss: the message is routed before it is acknowledged, so that an
	// acknowledged message is in every session subscribed to it: a
	// subscriber that reconnects to its session once the publisher has
	// the PUBACK gets it. Upstream acknowledged first, and a session
	// resumed meanwhile lost the message, or got it with DUP 1. A
	// subscriber that could not take it yet slows the publisher (see
	// backpressure.go). In a cluster, the acknowledgement may wait for the
	// other nodes to have it too (remote.go).
	if s.publishAwaiting(cl, pk, &ack) {
		return nil
	}
	return s.finishPublish(cl, pk, &ack)
}

// finishPublish acknowledges pk, a QoS 1 or 2 publish of cl that was
// routed, with ack.
func (s *Server) finishPublish(cl *Client, pk *packets.Packet, ack *packets.Packet) error {
	err := cl.WritePacket(*ack)
	if err != nil {
		return err
	}

	if pk.FixedHeader.Qos == 1 {
		if ok := cl.State.Inflight.DeleteInbound(ack.PacketID); ok {
			atomic.AddInt64(&s.Info.Inflight, -1)
		}
		cl.State.Inflight.IncreaseReceiveQuota()
	}

	return nil
}

// retainMessage adds a message to a topic, and if a persistent store is provided,
// adds the message to the store to be reloaded if necessary.
//
// dss: it reports false for a client's message that the bounds of
// retained messages refuse (see retained.go), which it counts and logs.
func (s *Server) retainMessage(cl *Client, pk *packets.Packet) bool {
	if s.Options.Capabilities.RetainAvailable == 0 || pk.Ignore {
		return true
	}

	out := pk.Copy(false)
	maxCount, maxBytes := s.Options.MaxRetained, s.Options.MaxRetainedBytes
	if cl.Net.Inline {
		maxCount, maxBytes = 0, 0
	}
	if _, ok := s.Topics.retainWithin(&out, maxCount, maxBytes); !ok {
		s.retainedRefused(cl, pk)
		return false
	}
	if ev := s.Options.Retained; ev != nil {
		ev.Retained(cl, pk)
	}
	return true
}

// retainedRefused counts and logs a retained message the bounds refused.
func (s *Server) retainedRefused(cl *Client, pk *packets.Packet) {
	s.Faults.RefusedRetained.Add(1)
	if s.faultLog.Allow() {
		s.Log.Warn("retained message refused: the retained messages are at their bound", "client", cl.ID,
			"remote", cl.Net.Remote, "retained", s.Topics.Retained.Len(), "retained_bytes", s.Topics.RetainedBytes(),
			"max", s.Options.MaxRetained, "max_bytes", s.Options.MaxRetainedBytes, "payload_bytes", len(pk.Payload))
	}
}

// publishToSubscribers publishes a publish packet to all subscribers with matching topic filters.
//
// dss: it returns a subscriber that could not take the message yet (it
// was parked), for its publisher to wait for (see backpressure.go); nil
// if none.
func (s *Server) publishToSubscribers(pk packets.Packet) (congested *Client) {
	if pk.Ignore {
		return nil
	}
	s.stampRouted(&pk)
	return s.routeLocal(pk, s.remoteRoute(&pk)) // dss: and to the other nodes of a cluster
}

// stampRouted sets when a message routed from here was created and
// expires, if not set yet.
func (s *Server) stampRouted(pk *packets.Packet) {
	if pk.Created == 0 {
		pk.Created = time.Now().Unix()
	}

	if pk.Expiry == 0 {
		if expiry := minimum(s.Options.Capabilities.MaximumMessageExpiryInterval,
			int64(pk.Properties.MessageExpiryInterval)); expiry > 0 {
			pk.Expiry = pk.Created + expiry
		}
	}
	if pk.Expires == 0 {
		s.setExpires(pk, time.Now())
	}
}

// routeLocal delivers pk to the subscribers of this server; r, if not nil,
// decides which shared subscriptions are served here (dss). It returns a
// subscriber that could not take the message yet, as publishToSubscribers
// does.
func (s *Server) routeLocal(pk packets.Packet, r Routed) (congested *Client) {
	subscribers := s.Topics.Subscribers(pk.TopicName)
	if len(subscribers.Shared) > 0 {
		keepServed(subscribers, r)
	}
	if len(subscribers.Shared) > 0 {
		subscribers.SelectShared()
		subscribers.MergeSharedSelected()
	}

	for _, inlineSubscription := range subscribers.InlineSubscriptions {
		inlineSubscription.Handler(s.inlineClient, inlineSubscription.Subscription, pk)
	}

	for id, subs := range subscribers.Subscriptions {
		if cl, ok := s.Clients.Get(id); ok {
			out, err := s.publishToClient(cl, subs, pk)
			for errors.Is(err, errSessionMoved) && cl.State.successor.Load() != nil {
				cl = cl.State.successor.Load() // dss: the session's connection now
				out, err = s.publishToClient(cl, subs, pk)
			}
			if err != nil {
				s.Log.Debug("failed publishing packet", "error", err, "client", cl.ID, "packet", pk)
			} else if out.Expiry < 0 && congested == nil {
				congested = cl // parked
			}
		}
	}
	return congested
}

func (s *Server) publishToClient(cl *Client, sub packets.Subscription, pk packets.Packet) (packets.Packet, error) {
	out := new(packets.Packet)
	*out = pk.Copy(false)
	send, err := s.PrepareDelivery(cl, sub, out)
	if !send || err != nil {
		return *out, err
	}
	ret := *out // the write loop changes *out once it is queued
	return ret, s.enqueue(cl, out, nil)
}

// PublishToClient delivers pk to cl as routing does for a subscription
// sub of cl that matches pk's topic: it is written by the client's write
// loop. pk's properties are shared with the queued copy, not copied.
//
// dss: exported so that the state store can deliver a response to the
// subscribers of its response topic without the topic trie scan.
func (s *Server) PublishToClient(cl *Client, sub packets.Subscription, pk *packets.Packet) error {
	out := new(packets.Packet)
	*out = *pk
	send, err := s.PrepareDelivery(cl, sub, out)
	if !send || err != nil {
		return err
	}
	return s.enqueue(cl, out, nil)
}

// WriteDelivery sends out, a delivery PrepareDelivery made ready, to cl,
// with ack (if not nil) just before it, in one write: at once if cl's
// write loop has nothing to do (see Client.WriteNow for wait), otherwise
// through the write loop, after what it holds. It reports whether ack
// was written or queued; when it was not, the caller must see to it.
// Neither packet is kept: the queue gets copies.
//
// dss: the state store answers a request with its PUBACK and response
// from the goroutine that has the result, without waking a write loop.
func (s *Server) WriteDelivery(cl *Client, out, ack *packets.Packet, wait bool) (bool, error) {
	var written bool
	var err error
	if ack != nil {
		written, err = cl.WriteNow(wait, ack, out)
	} else {
		written, err = cl.WriteNow(wait, out)
	}
	switch {
	case written:
		return ack != nil, err // an error here is the connection's: nothing to retry
	case err != nil:
		return false, err
	}
	return s.enqueueCopies(cl, out, ack)
}

// enqueueCopies queues copies of out and ack for cl's write loop.
func (s *Server) enqueueCopies(cl *Client, out, ack *packets.Packet) (bool, error) {
	queued := new(packets.Packet)
	*queued = *out
	var queuedAck *packets.Packet
	if ack != nil {
		queuedAck = new(packets.Packet)
		*queuedAck = *ack
	}
	if err := s.enqueue(cl, queued, queuedAck); err != nil {
		return false, err
	}
	return ack != nil, nil
}

// PrepareDelivery does for a delivery of out to cl through the subscription
// sub what routing does before the write: the no-local rule, the ACL
// check, the retain flag, subscription identifiers, the QoS, the topic
// alias, the packet identifier and the inflight entry. It changes out in
// place into the packet to write, and reports whether it is to be written
// now (false for no-local, or when the client's send quota is exhausted:
// the packet is then parked and sent later).
//
// dss: split out of publishToClient so that the state store can write a
// response together with the PUBACK of its request, in one write.
func (s *Server) PrepareDelivery(cl *Client, sub packets.Subscription, out *packets.Packet) (bool, error) {
	if sub.NoLocal && out.Origin == cl.ID {
		return false, nil // [MQTT-3.8.3-3]
	}

	if !s.Options.allowed(cl, out.TopicName, false) {
		return false, packets.ErrNotAuthorized
	}
	return s.PrepareCheckedDelivery(cl, sub, out)
}

// CheckACL asks Options.Access whether cl may publish on topic (write) or
// receive it (read).
//
// dss: so that the state store can check the topic of a requester's own
// response route once, when the route is made.
func (s *Server) CheckACL(cl *Client, topic string, write bool) bool {
	return s.Options.allowed(cl, topic, write)
}

// PrepareCheckedDelivery is PrepareDelivery for a delivery whose topic
// the caller had CheckACL check for cl already: Options.Access is not
// asked again.
//
// dss: a state store response on the requester's own route, checked when
// the route was made, costs no ACL check per response.
func (s *Server) PrepareCheckedDelivery(cl *Client, sub packets.Subscription, out *packets.Packet) (bool, error) {
	if sub.NoLocal && out.Origin == cl.ID {
		return false, nil // [MQTT-3.8.3-3]
	}
	if !sub.FwdRetainedFlag && ((cl.Properties.ProtocolVersion == 5 && !sub.RetainAsPublished) || cl.Properties.ProtocolVersion < 5) { // ![MQTT-3.3.1-13] [v3 MQTT-3.3.1-9]
		out.FixedHeader.Retain = false // [MQTT-3.3.1-12]
	}

	if len(sub.Identifiers) > 0 { // [MQTT-3.3.4-3]
		// dss: a merged subscription lists the filters without an
		// identifier as 0, which is never sent: only the others cost a
		// slice.
		var ids []int
		for _, id := range sub.Identifiers {
			if id > 0 {
				ids = append(ids, id) // [MQTT-3.3.4-4] ![MQTT-3.3.4-5]
			}
		}
		sort.Ints(ids)
		out.Properties.SubscriptionIdentifier = ids
	}

	if out.FixedHeader.Qos > sub.Qos {
		out.FixedHeader.Qos = sub.Qos
	}

	if out.FixedHeader.Qos > s.Options.Capabilities.MaximumQos {
		out.FixedHeader.Qos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9]
	}

	if cl.Properties.Props.TopicAliasMaximum > 0 {
		var aliasExists bool
		topic := out.TopicName
		out.Properties.TopicAlias, aliasExists = cl.State.TopicAliases.Outbound.Set(topic)
		if out.Properties.TopicAlias > 0 {
			out.Properties.TopicAliasFlag = true
			if aliasExists {
				out.TopicName = ""
			}
		}
	}

	// dss: a message for a session without a connection stays in flight
	// to be sent when the client reconnects: for the first time, not as a
	// redelivery (see ResendInflightMessages).
	offline := cl.Net.Conn == nil || cl.Closed()
	out.Queued = offline && !cl.Net.Inline

	if out.FixedHeader.Qos > 0 {
		held, err := s.holdDelivery(cl, out, &offline)
		if err != nil || held {
			return false, err
		}
	}

	if !offline && out.FixedHeader.Qos == 0 {
		cl.State.handover.RLock()
		offline = cl.State.awaitingConnack // dss: not before the CONNACK
		cl.State.handover.RUnlock()
	}
	if offline {
		return false, packets.CodeDisconnect
	}
	return true, nil
}

// holdDelivery takes out, a QoS 1 or 2 delivery to cl, into cl's
// messages in flight with a packet id of its own. It reports held for a
// message that is not to be written now: parked until cl's receive
// window has room (see backpressure.go), or queued for a session without
// a connection (*offline, which it may set). Held messages are kept
// within the bounds of queued memory (queues.go); err is
// ErrQuotaExceeded for one that cannot be.
//
// dss: a message past the client's receive window waited parked as
// before, but past Capabilities.MaximumInflight messages (sent or not)
// the next ones were dropped, for connected clients as for sessions
// without a connection, although their publishers had their PUBACKs.
// The messages sent and unacknowledged are bounded by the window (at
// most MaximumInflight); the others by memory and packet ids, the oldest
// never sent dropped past them.
func (s *Server) holdDelivery(cl *Client, out *packets.Packet, offline *bool) (held bool, err error) {
	// dss: the session's messages do not move to a new connection
	// while this one is added (see inheritClientSession); nothing of
	// the application runs under the lock.
	cl.State.handover.RLock()
	if cl.State.isTakenOver.Load() {
		cl.State.handover.RUnlock()
		return false, errSessionMoved
	}
	if cl.State.awaitingConnack {
		*offline = true
	}
	out.Queued = *offline && !cl.Net.Inline
	inf := cl.State.Inflight
	var dropped []droppedMessage
	i, err := cl.NextPacketID() // [MQTT-4.3.2-1] [MQTT-4.3.3-1]
	for err != nil {
		// dss: every packet id is held: the oldest message never sent
		// gives its up.
		d, ok := inf.dropOldest(sessionLimit)
		if !ok {
			cl.State.handover.RUnlock()
			s.queuedDropped(cl, dropped)
			return false, s.deliveryDropped(cl, out, err)
		}
		dropped = append(dropped, d)
		i, err = cl.NextPacketID()
	}
	out.PacketID = uint16(i) // [MQTT-2.2.1-4]

	// A message is sent at once while the client's receive window has
	// room and no older message waits for it; otherwise it is parked.
	park := !out.Queued && atomic.LoadInt32(&inf.maximumSendQuota) > 0 &&
		(atomic.LoadInt32(&inf.sendQuota) <= 0 || inf.HasParked())
	added := false
	refused := withinLimits
	if out.Queued || park {
		if park {
			out.Expiry = -1
		}
		var more []droppedMessage
		more, refused = inf.queue(out)
		dropped = append(dropped, more...)
		added = refused == withinLimits
	} else {
		added = inf.Set(out) // [MQTT-4.3.2-3] [MQTT-4.3.3-3]
	}
	cl.State.handover.RUnlock()
	if (out.Queued || park) && !s.queueDelivered(cl, out, dropped, refused) {
		return false, packets.ErrQuotaExceeded
	} else if len(dropped) > 0 && !out.Queued && !park {
		s.queuedDropped(cl, dropped)
	}
	if park && atomic.LoadInt32(&inf.sendQuota) > 0 {
		s.releaseParked(cl) // parked behind older ones, with quota to go
	}
	if added {
		atomic.AddInt64(&s.Info.Inflight, 1)
		if !park {
			cl.State.Inflight.DecreaseSendQuota()
		}
	}
	return park, nil
}

// deliveryDropped counts and logs a QoS delivery dropped because the
// client's inflight store is full, or for want of a packet id (err), and
// returns the error for it.
func (s *Server) deliveryDropped(cl *Client, out *packets.Packet, err error) error {
	atomic.AddInt64(&s.Info.InflightDropped, 1)
	if err != nil {
		s.logDropped(cl, "packet ids exhausted")
	} else {
		s.logDropped(cl, "unacknowledged messages at the maximum")
	}
	return packets.ErrQuotaExceeded
}

// enqueue hands a prepared delivery, and the acknowledgement to write
// before it, if any, to the client's write loop.
func (s *Server) enqueue(cl *Client, out, ack *packets.Packet) error {
	// dss: a QoS 1 or 2 message is queued whatever the queue holds: it
	// is in flight already, within the client's receive window (at most
	// MaximumInflight); dropping it here lost a message whose publisher
	// had its PUBACK.
	if !cl.enqueueBounded(pendingWrite{pk: out, ack: ack}, out.FixedHeader.Qos == 0) {
		atomic.AddInt64(&s.Info.MessagesDropped, 1)
		s.logDropped(cl, "too many pending writes")
		if out.FixedHeader.Qos > 0 {
			cl.State.Inflight.Delete(out.PacketID) // packet was dropped due to irregular circumstances, so rollback inflight.
			cl.State.Inflight.IncreaseSendQuota()
		}
		return packets.ErrPendingClientWritesExceeded
	}
	return nil
}

// buildAck builds a standardised ack message for Puback, Pubrec, Pubrel, Pubcomp packets.
func (s *Server) buildAck(packetID uint16, pkt, qos byte, properties packets.Properties, reason packets.Code) packets.Packet {
	if s.Options.Capabilities.Compatibilities.NoInheritedPropertiesOnAck {
		properties = packets.Properties{}
	}
	if reason.Code >= packets.ErrUnspecifiedError.Code {
		properties.ReasonString = reason.Reason
	}

	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: pkt,
			Qos:  qos,
		},
		PacketID:   packetID,    // [MQTT-2.2.1-5]
		ReasonCode: reason.Code, // [MQTT-3.4.2-1]
		Properties: properties,
		Created:    time.Now().Unix(),
		Expiry:     time.Now().Unix() + s.Options.Capabilities.MaximumMessageExpiryInterval,
	}

	return pk
}

// processPuback processes a Puback packet, denoting completion of a QOS 1 packet sent from the server.
func (s *Server) processPuback(cl *Client, pk *packets.Packet) error {
	// An id not in flight is omitted, but would be
	// packets.ErrPacketIdentifierNotFound. dss: Delete says so; asking
	// Has first took the lock and looked the id up twice.
	if ok := cl.State.Inflight.Delete(pk.PacketID); ok { // [MQTT-4.3.2-5]
		cl.State.Inflight.IncreaseSendQuota()
		cl.State.retained.wake()
		cl.acknowledged()
		atomic.AddInt64(&s.Info.Inflight, -1)
		s.acks.signal()
	}

	return nil
}

// processPubrec processes a Pubrec packet, denoting receipt of a QOS 2 packet sent from the server.
func (s *Server) processPubrec(cl *Client, pk *packets.Packet) error {
	if !cl.State.Inflight.Has(pk.PacketID) { // [MQTT-4.3.3-7] [MQTT-4.3.3-13]
		return cl.WritePacket(s.buildAck(pk.PacketID, packets.Pubrel, 1, pk.Properties, packets.ErrPacketIdentifierNotFound))
	}

	if pk.ReasonCode >= packets.ErrUnspecifiedError.Code || !pk.ReasonCodeValid() { // [MQTT-4.3.3-4]
		if ok := cl.State.Inflight.Delete(pk.PacketID); ok {
			atomic.AddInt64(&s.Info.Inflight, -1)
		}
		return nil // as per MQTT5 Section 4.13.2 paragraph 2
	}

	ack := s.buildAck(pk.PacketID, packets.Pubrel, 1, pk.Properties, packets.CodeSuccess) // [MQTT-4.3.3-4] ![MQTT-4.3.3-6]
	cl.State.Inflight.DecreaseReceiveQuota()                                              // -1 RECV QUOTA
	cl.State.Inflight.Set(&ack)                                                           // [MQTT-4.3.3-5]
	return cl.WritePacket(ack)
}

// processPubrel processes a Pubrel packet, denoting completion of a QOS 2 packet sent from the client.
func (s *Server) processPubrel(cl *Client, pk *packets.Packet) error {
	if !cl.State.Inflight.HasInbound(pk.PacketID) { // [MQTT-4.3.3-7] [MQTT-4.3.3-13]
		return cl.WritePacket(s.buildAck(pk.PacketID, packets.Pubcomp, 0, pk.Properties, packets.ErrPacketIdentifierNotFound))
	}

	if pk.ReasonCode >= packets.ErrUnspecifiedError.Code || !pk.ReasonCodeValid() { // [MQTT-4.3.3-9]
		if ok := cl.State.Inflight.DeleteInbound(pk.PacketID); ok {
			atomic.AddInt64(&s.Info.Inflight, -1)
		}
		return nil
	}

	ack := s.buildAck(pk.PacketID, packets.Pubcomp, 0, pk.Properties, packets.CodeSuccess) // [MQTT-4.3.3-11]
	cl.State.Inflight.Set(&ack)

	err := cl.WritePacket(ack)
	if err != nil {
		return err
	}

	cl.State.Inflight.IncreaseReceiveQuota()                    // +1 RECV QUOTA
	cl.State.Inflight.IncreaseSendQuota()                       // +1 SENT QUOTA
	if ok := cl.State.Inflight.DeleteInbound(pk.PacketID); ok { // [MQTT-4.3.3-12]
		atomic.AddInt64(&s.Info.Inflight, -1)
	}

	return nil
}

// processPubcomp processes a Pubcomp packet, denoting completion of a QOS 2 packet sent from the server.
func (s *Server) processPubcomp(cl *Client, pk *packets.Packet) error {
	// regardless of whether the pubcomp is a success or failure, we end the qos flow, delete inflight, and restore the quotas.
	cl.State.Inflight.IncreaseReceiveQuota() // +1 RECV QUOTA
	cl.State.Inflight.IncreaseSendQuota()    // +1 SENT QUOTA
	cl.State.retained.wake()
	if ok := cl.State.Inflight.Delete(pk.PacketID); ok {
		cl.acknowledged()
		atomic.AddInt64(&s.Info.Inflight, -1)
		s.acks.signal()
	}

	return nil
}

// processSubscribe processes a Subscribe packet.
func (s *Server) processSubscribe(cl *Client, pk *packets.Packet) error {
	// dss: the packet id is not checked against the server's messages in
	// flight: the client's packet ids and the server's are independent
	// [MQTT-2.2.1], and SUBACK 0x91 refused a resubscription whose id the
	// server happened to use for a queued message (0x91 is not even a
	// SUBACK code of MQTT 3.1.1 [MQTT-3.9.3-2]).
	if pk.Properties.SubscriptionIdentifier != nil && s.Options.Capabilities.SubIDAvailable == 0 {
		return packets.ErrSubscriptionIdentifiersNotSupported // DISCONNECT 0xA1 (3.2.2.3.12)
	}
	for _, sub := range pk.Filters {
		if sub.NoLocal && IsSharedFilter(sub.Filter) && cl.Properties.ProtocolVersion == 5 {
			// dss: a protocol error, which ends the connection with
			// DISCONNECT 0x82; it was a SUBACK reason code 0x82, which
			// SUBACK does not have [MQTT-3.8.3-4].
			return packets.ErrProtocolViolationInvalidSharedNoLocal
		}
	}

	filterExisted := make([]bool, len(pk.Filters))
	reasonCodes := make([]byte, len(pk.Filters))
	for i, sub := range pk.Filters {
		if !IsValidFilter(sub.Filter, false) {
			reasonCodes[i] = packets.ErrTopicFilterInvalid.Code
		} else if !cl.Net.Inline && s.Options.topicBeyondLimits(sub.Filter) {
			s.Faults.RefusedTopics.Add(1)
			reasonCodes[i] = packets.ErrTopicFilterInvalid.Code // dss: before the index's lock
		} else if code, ok := s.unavailableSubscription(sub.Filter); !ok {
			reasonCodes[i] = code.Code // dss
		} else if sub.NoLocal && IsSharedFilter(sub.Filter) {
			reasonCodes[i] = packets.ErrProtocolViolationInvalidSharedNoLocal.Code // [MQTT-3.8.3-4]
		} else if !s.Options.allowed(cl, sub.Filter, false) {
			reasonCodes[i] = packets.ErrNotAuthorized.Code
			if s.Options.Capabilities.Compatibilities.ObscureNotAuthorized {
				reasonCodes[i] = packets.ErrUnspecifiedError.Code
			}
		} else if s.subscriptionsFull(cl, sub.Filter) {
			reasonCodes[i] = packets.ErrQuotaExceeded.Code // dss
		} else {
			if sub.Qos > s.Options.Capabilities.MaximumQos {
				sub.Qos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9]
			}

			isNew := s.Topics.Subscribe(cl.ID, sub) // [MQTT-3.8.4-3]
			if isNew {
				atomic.AddInt64(&s.Info.Subscriptions, 1)
			}
			cl.State.Subscriptions.Add(sub.Filter, sub) // [MQTT-3.2.2-10]

			filterExisted[i] = !isNew
			reasonCodes[i] = sub.Qos // [MQTT-3.9.3-1] [MQTT-3.8.4-7]
		}

		if reasonCodes[i] > packets.CodeGrantedQos2.Code && cl.Properties.ProtocolVersion < 5 { // MQTT3
			reasonCodes[i] = packets.ErrUnspecifiedError.Code
		}
	}

	ack := packets.Packet{ // [MQTT-3.8.4-1] [MQTT-3.8.4-5]
		FixedHeader: packets.FixedHeader{
			Type: packets.Suback,
		},
		PacketID:    pk.PacketID, // [MQTT-2.2.1-6] [MQTT-3.8.4-2]
		ReasonCodes: reasonCodes, // [MQTT-3.8.4-6]
		Properties: packets.Properties{
			User: pk.Properties.User,
		},
	}

	// dss: the retained messages the subscriptions are sent are those
	// retained by now; one retained after the SUBACK reaches them as it is
	// published, and was sent twice when the retained messages were read
	// later (FORK.md 67).
	mark := s.Topics.retainedMark()
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Subscribed(cl, pk, reasonCodes)
	}
	err := cl.WritePacket(ack)
	if err != nil {
		return err
	}

	for i, sub := range pk.Filters { // [MQTT-3.3.1-9]
		if reasonCodes[i] >= packets.ErrUnspecifiedError.Code {
			continue
		}

		s.publishRetainedToClient(cl, sub, filterExisted[i], mark)
	}

	return nil
}

// subscriptionsFull reports whether filter would be a subscription of cl
// past Options.MaxSubscriptionsPerClient: a new one when cl holds that
// many already. A filter cl holds may always be subscribed again.
func (s *Server) subscriptionsFull(cl *Client, filter string) bool {
	limit := s.Options.MaxSubscriptionsPerClient
	if limit <= 0 || cl.Net.Inline || cl.State.Subscriptions.Len() < limit {
		return false
	}
	_, held := cl.State.Subscriptions.Get(filter)
	return !held
}

// unavailableSubscription reports the reason code refusing a subscription
// to filter that the server's capabilities rule out: a shared
// subscription when SharedSubAvailable is 0 (0x9E), a filter with a
// wildcard when WildcardSubAvailable is 0 (0xA2). ok is true when the
// filter is served.
//
// dss: the capabilities were announced in CONNACK but not enforced.
func (s *Server) unavailableSubscription(filter string) (code packets.Code, ok bool) {
	caps := s.Options.Capabilities
	if IsSharedFilter(filter) && caps.SharedSubAvailable == 0 {
		return packets.ErrSharedSubscriptionsNotSupported, false
	}
	if caps.WildcardSubAvailable == 0 && strings.ContainsAny(filter, "+#") {
		return packets.ErrWildcardSubscriptionsNotSupported, false
	}
	return packets.CodeSuccess, true
}

// processUnsubscribe processes an unsubscribe packet.
func (s *Server) processUnsubscribe(cl *Client, pk *packets.Packet) error {
	// dss: nor is the packet id of an UNSUBSCRIBE checked against the
	// server's messages in flight [MQTT-2.2.1] (see processSubscribe).
	reasonCodes := make([]byte, len(pk.Filters))
	for i, sub := range pk.Filters { // [MQTT-3.10.4-6] [MQTT-3.11.3-1]
		if !cl.Net.Inline && s.Options.topicBeyondLimits(sub.Filter) {
			// dss: nothing to look for (it could not be subscribed), and
			// the index's lock is not taken for it.
			s.Faults.RefusedTopics.Add(1)
			reasonCodes[i] = packets.ErrTopicFilterInvalid.Code
			continue
		}
		if q := s.Topics.Unsubscribe(sub.Filter, cl.ID); q {
			atomic.AddInt64(&s.Info.Subscriptions, -1)
			reasonCodes[i] = packets.CodeSuccess.Code
		} else {
			reasonCodes[i] = packets.CodeNoSubscriptionExisted.Code
		}

		cl.State.Subscriptions.Delete(sub.Filter) // [MQTT-3.10.4-2] [MQTT-3.10.4-2] ~[MQTT-3.10.4-3]
	}

	ack := packets.Packet{ // [MQTT-3.10.4-4]
		FixedHeader: packets.FixedHeader{
			Type: packets.Unsuback,
		},
		PacketID:    pk.PacketID, // [MQTT-2.2.1-6]  [MQTT-3.10.4-5]
		ReasonCodes: reasonCodes, // [MQTT-3.11.3-2]
		Properties: packets.Properties{
			User: pk.Properties.User,
		},
	}

	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(cl, pk)
	}
	return cl.WritePacket(ack)
}

// UnsubscribeClient unsubscribes a client from all of their subscriptions.
func (s *Server) UnsubscribeClient(cl *Client) {
	i := 0
	filterMap := cl.State.Subscriptions.GetAll()
	filters := make([]packets.Subscription, len(filterMap))
	for k := range filterMap {
		cl.State.Subscriptions.Delete(k)
	}

	if cl.IsTakenOver() {
		return
	}

	for k, v := range filterMap {
		if s.Topics.Unsubscribe(k, cl.ID) {
			atomic.AddInt64(&s.Info.Subscriptions, -1)
		}
		filters[i] = v
		i++
	}
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(cl, &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe}, Filters: filters})
	}
}

// processAuth processes an Auth packet.
func (s *Server) processAuth(cl *Client, pk *packets.Packet) error {
	// dss: an AUTH from a client that named no Authentication Method in
	// its CONNECT is a Protocol Error [MQTT-4.12.0-7]; upstream answered
	// nothing. A CONNECT that names one is refused (validateConnect), so
	// no client of this core may send AUTH.
	if cl.Properties.Props.AuthenticationMethod == "" {
		return packets.ErrProtocolViolationUnexpectedAuth
	}
	return nil
}

// processDisconnect processes a Disconnect packet.
func (s *Server) processDisconnect(cl *Client, pk *packets.Packet) error {
	if pk.Properties.SessionExpiryIntervalFlag {
		if pk.Properties.SessionExpiryInterval > 0 && cl.Properties.Props.SessionExpiryInterval == 0 {
			return packets.ErrProtocolViolationZeroNonZeroExpiry
		}

		cl.Properties.Props.SessionExpiryInterval = pk.Properties.SessionExpiryInterval
		cl.Properties.Props.SessionExpiryIntervalFlag = true
	}

	if pk.ReasonCode == packets.CodeDisconnectWillMessage.Code { // [MQTT-3.1.2.5] Non-normative comment
		return packets.CodeDisconnectWillMessage
	}

	s.loop.willDelayed.Delete(cl.ID) // [MQTT-3.1.3-9] [MQTT-3.1.2-8]
	cl.Stop(packets.CodeDisconnect)  // [MQTT-3.14.4-2]

	return nil
}

// DisconnectClient sends a Disconnect packet to a client and then closes the client connection.
func (s *Server) DisconnectClient(cl *Client, code packets.Code) error {
	out := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: packets.Disconnect,
		},
		ReasonCode: code.Code,
		Properties: packets.Properties{},
	}

	if code.Code >= packets.ErrUnspecifiedError.Code {
		out.Properties.ReasonString = code.Reason //  // [MQTT-3.14.2-1]
	}

	// We already have a code we are using to disconnect the client, so we are not
	// interested if the write packet fails due to a closed connection (as we are closing it).
	err := cl.WritePacket(out)
	if !s.Options.Capabilities.Compatibilities.PassiveClientDisconnect {
		cl.stopAfterDisconnect(code) // dss: closes once the client read it
		if code.Code >= packets.ErrUnspecifiedError.Code {
			return code
		}
	}

	return err
}

// Close attempts to gracefully shut down the server, all listeners, clients, and stores.
func (s *Server) Close() error {
	s.attachMu.Lock()
	if s.closing {
		s.attachMu.Unlock()
		return nil // dss: closed once
	}
	s.closing = true
	// dss: a connection still sending its CONNECT is not a client yet;
	// Close waited for it until its CONNECT deadline.
	for cl := range s.connecting {
		cl.Stop(ErrServerClosing)
	}
	s.attachMu.Unlock()
	close(s.done)
	s.Log.Debug("mqtt core stopping")
	s.Listeners.CloseAll(s.closeListenerClients)
	for _, l := range s.readLoops {
		l.close()
	}
	s.workers.close()

	s.Log.Debug("mqtt core stopped")
	return nil
}

// closeListenerClients closes all clients on the specified listener.
func (s *Server) closeListenerClients(listener string) {
	clients := s.Clients.GetByListener(listener)
	for _, cl := range clients {
		_ = s.DisconnectClient(cl, packets.ErrServerShuttingDown)
	}
}

// clearExpiredClients deletes all clients which have been disconnected for longer
// than their given expiry intervals.
func (s *Server) clearExpiredClients(dt int64) {
	s.sweep(func(client *Client) {
		disconnected := client.StopTime()
		if disconnected == 0 {
			return
		}

		expire := s.Options.Capabilities.MaximumSessionExpiryInterval
		if client.Properties.ProtocolVersion == 5 && client.Properties.Props.SessionExpiryIntervalFlag {
			expire = client.Properties.Props.SessionExpiryInterval
		}

		if disconnected+int64(expire) < dt {
			s.expireSession(client)
		}
	})
}

// expireSession ends the session of client, whose expiry interval has
// passed since its connection ended. dss: its messages are let go of
// (upstream left them to the garbage collector), under the lock of
// sessions, which a connection taking the session over holds.
func (s *Server) expireSession(client *Client) {
	s.sessionMu.Lock()
	defer s.sessionMu.Unlock()
	if client.IsTakenOver() {
		return
	}
	if ev := s.Options.Sessions; ev != nil {
		ev.SessionExpired(client)
	}
	s.Clients.Delete(client.ID) // [MQTT-4.1.0-2]
	client.ClearInflights()
	client.State.Inflight.detach()
}

// sweep calls fn with every client, from the slice kept for sweeps; only
// the event loop sweeps.
func (s *Server) sweep(fn func(*Client)) {
	s.loop.swept = s.Clients.AppendAll(s.loop.swept[:0])
	defer clear(s.loop.swept) // holds no client until the next sweep
	for _, client := range s.loop.swept {
		fn(client)
	}
}

// clearExpiredRetainedMessage deletes retained messages from topics if they have expired.
//
// dss: a retained message expires at its own expiry [MQTT-3.3.2-5], or
// once older than the server's maximum message expiry interval; they are
// found by a heap of their deadlines (see retained.go), where every
// retained message was copied every second.
func (s *Server) clearExpiredRetainedMessages(now int64) {
	s.Topics.expireRetained(now)
}

// clearExpiredInflights deletes any inflight messages which have expired.
func (s *Server) clearExpiredInflights(now int64) {
	s.sweep(func(client *Client) {
		client.ClearExpiredInflights(now, s.Options.Capabilities.MaximumMessageExpiryInterval)
	})
}

// minimum differs from built-in min, it returns minimum of the non-zero value a and b.
// If both a and b are zero value, it reutrns 0.
func minimum(a, b int64) (m int64) {
	if a != 0 {
		m = a
		if b != 0 && b < a {
			m = b
		}
		return
	}

	if b != 0 {
		m = b
	}
	return
}

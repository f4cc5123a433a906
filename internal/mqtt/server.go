// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"errors"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/mqtt/packets"
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

	// SubscribeOnLoop says that Subscriptions' events return without
	// waiting, so that a read loop serves SUBSCRIBE and UNSUBSCRIBE in
	// its turn, as it does publishes. Otherwise it hands them back to the
	// connection's goroutine, and a publish another connection sent
	// right after a SUBSCRIBE could be routed before the subscription
	// exists (the loop routes it while the goroutine is being woken).
	// dss.
	SubscribeOnLoop bool

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
// dss: see loopconn.go.
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
		l.Close()
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

package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/mqtt/packets"
	"golang.org/x/time/rate"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// Store carries out state store requests (see service.Store).
type Store = service.Store

// Config configures a Broker.
type Config struct {
	// Listen is the TCP address of the MQTT listener. Empty means ":1883".
	Listen string
	// Listener, when set, is served instead of a listener on Listen.
	Listener net.Listener
	// Logger receives the log lines; nil means slog.Default().
	Logger *slog.Logger
	// Metrics counts requests; nil means unexported metrics.
	Metrics *Metrics
	// MaxPacketSize bounds inbound MQTT packets in bytes; 0 means the
	// protocol's limit (256 MiB).
	MaxPacketSize uint32
	// Capabilities are the MQTT 5 capabilities announced and enforced;
	// nil means DefaultCapabilities.
	Capabilities *Capabilities
	// ReadLoops is the number of read loops that serve busy connections
	// (epoll, Linux only) instead of a goroutine woken per request, and
	// hold idle ones with no goroutine of their own: 0 means one per CPU
	// the process may use, a negative number none.
	ReadLoops int
	// ConnectTimeout bounds the time a new connection has to send its
	// CONNECT; 0 means 10 seconds.
	ConnectTimeout time.Duration
	// PacketReadTimeout bounds the time between the bytes of a packet
	// once it began; 0 means DefaultPacketReadTimeout, a negative
	// duration no bound.
	PacketReadTimeout time.Duration
	// MaxKeySize and MaxValueSize bound a request's key and value, in
	// bytes: 0 means DefaultMaxKeySize and DefaultMaxValueSize. A client
	// id may be as long as leaves room for the notification topic of the
	// longest key (MaxClientIDSize).
	MaxKeySize, MaxValueSize int
	// MaxWatchesPerClient bounds the KEYNOTIFY registrations of one
	// connection; 0 means no bound.
	MaxWatchesPerClient int
	// MaxSubscriptionsPerClient bounds the topic filters of one client's
	// session (SUBACK 0x97 past it); 0 means no bound.
	MaxSubscriptionsPerClient int
	// MaxTopicLevels and MaxTopicLength bound the levels and bytes of
	// the topics and filters clients send (SUBACK or UNSUBACK 0x8F,
	// PUBACK 0x90, CONNACK 0x90 for a Will past them). 0 means
	// mqtt.DefaultMaxTopicLevels and no bound on the length but the
	// protocol's; a negative number no bound.
	MaxTopicLevels, MaxTopicLength int
	// MaxRetained and MaxRetainedBytes bound the number and memory of
	// the retained messages: a client's message to retain past them is
	// refused with PUBACK 0x97 (a QoS 0 one dropped). 0 means no bound.
	MaxRetained      int
	MaxRetainedBytes int64
	// TLSListen, when set, is the TCP address of a second MQTT listener
	// that speaks TLS with the configuration TLS.
	TLSListen string
	TLS       *tls.Config
	// WSListen and WSSListen, when set, are the TCP addresses of MQTT
	// over WebSocket listeners, plain and over TLS (with TLS); see
	// websocket.go for whom they admit.
	WSListen, WSSListen string
	// WSOrigins are the origins of web pages that may connect to the
	// WebSocket listeners beyond those of the listener's own host
	// (scheme://host[:port], with path.Match patterns).
	WSOrigins []string
	// Auth authenticates every client; nil admits every client without
	// credentials (and without the isolation of one client from another).
	Auth *auth.Authority
	// LoginDelay is how long a failed login from an address waits for
	// its answer, doubling with each failure in a row up to 32 times
	// that. Zero means 100 ms.
	LoginDelay time.Duration
	// MaxInflightPerClient bounds the requests of one connection that
	// are not answered yet; at the bound the broker reads nothing more
	// from the connection until one is answered, so that a client that
	// sends faster than it is answered is slowed by TCP back-pressure
	// while the other clients are served. 0 means
	// DefaultMaxInflightPerClient, a negative number no bound.
	MaxInflightPerClient int
	// MaxSessionQueueBytes bounds the memory of the messages queued for
	// one session without a connection, MaxQueuedBytes that of all of
	// them; past a bound the oldest messages never sent of the session
	// being fed are dropped. 0 means no bound.
	MaxSessionQueueBytes, MaxQueuedBytes int64
	// Cluster, when set, is the node of a cluster the broker spans: its
	// publishes, retained messages, client ids and sessions are the
	// cluster's (docs/adr/0009-one-broker-across-the-cluster.md). nil
	// for a single node.
	Cluster Cluster
}

// Defaults of the limits of Config.
const (
	// DefaultMaxKeySize leaves room in a notification topic for a client
	// id of up to 16,346 bytes.
	DefaultMaxKeySize = 16 << 10
	// DefaultMaxValueSize is half the default --max-packet-size: a SET
	// or GET of such a value fits a packet with room to spare.
	DefaultMaxValueSize = 32 << 20
	// DefaultMaxInflightPerClient is a quarter of the Receive Maximum the
	// broker announces (1024).
	DefaultMaxInflightPerClient = 256
	// DefaultMaxTopicLevels is Mosquitto's bound on the levels of a
	// topic (CVE-2019-11779).
	DefaultMaxTopicLevels = mqtt.DefaultMaxTopicLevels
)

// MaxClientIDSize returns the longest client id whose notification topic
// for a key of maxKeySize bytes fits an MQTT topic; below 23 bytes (which
// every MQTT server must accept), maxKeySize is too large.
func MaxClientIDSize(maxKeySize int) int {
	return (wire.MaxTopicLen - wire.NotifyTopicLen(0, maxKeySize)) / 2
}

// DefaultConnectTimeout is how long a new connection has to send its
// CONNECT by default.
const DefaultConnectTimeout = 10 * time.Second

// DefaultPacketReadTimeout is how long the bytes of a packet may stop
// coming before its connection is closed: far longer than a slow link
// leaves between two segments, short enough that connections which
// stopped mid-packet do not pile up.
const DefaultPacketReadTimeout = time.Minute

// inlineClientID names the broker's own client, which publishes responses
// and notifications. It holds a NUL byte, which MQTT forbids in client
// identifiers, so that no real client can take it over.
const inlineClientID = "dss\x00statestore"

// Broker is the MQTT broker with the state store bound to it.
type Broker struct {
	cfg      Config
	log      *slog.Logger
	metrics  *Metrics
	srv      *mqtt.Server
	listener *listeners.TCP
	tlsLn    *listeners.TCP       // nil without a TLS listener
	wsLn     *listeners.WebSocket // nil without a WebSocket listener
	wssLn    *listeners.WebSocket // nil without a WebSocket listener over TLS
	inline   *mqtt.Client
	watches  *registry
	own      ownRoutes // see routes.go
	store    Store
	span     *spanning // nil for a single node
	limits   service.Limits
	// completeFn is complete as a func value, bound once: a method value
	// taken per request would allocate.
	completeFn func(*engine.Op)
	// ctx is handed to the store with every request; it is cancelled when
	// the broker closes.
	ctx    context.Context
	cancel context.CancelFunc

	// refuseLog and loginLog limit the log lines about refused requests
	// and logins, so that a misbehaving client cannot flood the log.
	refuseLog *rate.Limiter
	loginLog  *rate.Limiter
	throttle  *auth.Throttle
	// loginCtx ends when the broker begins to close, cutting short the
	// waits of failed logins.
	loginCtx   context.Context
	stopLogins context.CancelFunc
	// drainMu is held shared by every request from its draining check to
	// its submission, so that Drain returns only once no accepted request
	// can still reach the store.
	drainMu   sync.RWMutex
	draining  bool // guarded by drainMu
	closeOnce sync.Once
}

// New creates the broker and binds its listener, so that Addr is known
// before Start.
func New(cfg Config) (*Broker, error) {
	if cfg.Listen == "" {
		cfg.Listen = ":1883"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.PacketReadTimeout == 0 {
		cfg.PacketReadTimeout = DefaultPacketReadTimeout
	}
	if cfg.MaxInflightPerClient == 0 {
		cfg.MaxInflightPerClient = DefaultMaxInflightPerClient
	}
	if cfg.MaxKeySize == 0 {
		cfg.MaxKeySize = DefaultMaxKeySize
	}
	if cfg.MaxValueSize == 0 {
		cfg.MaxValueSize = DefaultMaxValueSize
	}
	if MaxClientIDSize(cfg.MaxKeySize) < 23 {
		return nil, fmt.Errorf("broker: a maximum key size of %d bytes leaves no room in notification topics for a client id of 23 bytes; at most %d",
			cfg.MaxKeySize, (wire.MaxTopicLen-wire.NotifyTopicLen(23, 0))/2)
	}
	if cfg.LoginDelay <= 0 {
		cfg.LoginDelay = 100 * time.Millisecond
	}
	capabilities := DefaultCapabilities()
	if cfg.Capabilities != nil {
		capabilities = *cfg.Capabilities
	}
	if err := capabilities.Validate(); err != nil {
		return nil, err
	}
	caps := mqtt.NewDefaultServerCapabilities()
	capabilities.apply(caps)
	caps.MaximumPacketSize = cfg.MaxPacketSize
	// Acknowledgements must not echo the request's user properties: that
	// makes the broker core write reason code 0x01 into PUBACKs.
	caps.Compatibilities.NoInheritedPropertiesOnAck = true
	var span *spanning
	var remote mqtt.Remote
	if cfg.Cluster != nil {
		span = newSpanning(cfg.Cluster)
		remote = span
	}
	srv := mqtt.New(&mqtt.Options{
		Capabilities: caps,
		Logger:       cfg.Logger.With("component", "mqtt"),
		// The binding answers every request and copies what it keeps: a
		// request is read into memory of its connection, reused by the
		// next packet.
		ConsumedTopic: wire.RequestTopic,
		ReadLoops:     readLoops(cfg.ReadLoops),
		// Alone, a node's subscription events only count; in a cluster
		// they wait for the other nodes' routes (binding.Subscribed), so
		// a SUBSCRIBE goes to its connection's goroutine.
		SubscribeOnLoop: cfg.Cluster == nil,
		ConnectTimeout:  cfg.ConnectTimeout,
		// A packet that stops arriving is not held for good, whatever
		// the client's keep alive.
		PacketReadTimeout:   max(cfg.PacketReadTimeout, 0),
		MaxClientIDSize:     MaxClientIDSize(cfg.MaxKeySize),
		MaxPendingPerClient: int32(max(cfg.MaxInflightPerClient, 0)),
		// A session without a connection holds what it is sent until
		// it comes back; these bound that memory.
		MaxSessionQueueBytes: max(cfg.MaxSessionQueueBytes, 0),
		MaxQueuedBytes:       max(cfg.MaxQueuedBytes, 0),
		// Each topic filter costs memory, kept with a session that
		// outlives its connection.
		MaxSubscriptionsPerClient: max(cfg.MaxSubscriptionsPerClient, 0),
		// The rest of the cluster, which the core tells of its filters
		// and messages.
		Remote: remote,
		// Refused before the topic index's lock is taken for them.
		MaxTopicLevels: cfg.MaxTopicLevels,
		MaxTopicLength: cfg.MaxTopicLength,
		// Each retained message is kept in memory until replaced or
		// expired.
		MaxRetained:      max(cfg.MaxRetained, 0),
		MaxRetainedBytes: max(cfg.MaxRetainedBytes, 0),
	})
	if cfg.Auth != nil {
		srv.Options.MayTakeOver = sameOwner
	}
	cfg.Metrics.faults.Store(srv.Faults)
	cfg.Metrics.queues.Store(srv.Queues)
	cfg.Metrics.info.Store(srv.Info)
	cfg.Metrics.topics.Store(srv.Topics)
	b := &Broker{
		cfg:       cfg,
		log:       cfg.Logger,
		metrics:   cfg.Metrics,
		srv:       srv,
		refuseLog: rate.NewLimiter(rate.Every(time.Second), 10),
		loginLog:  rate.NewLimiter(rate.Every(time.Second), 10),
		throttle:  auth.NewThrottle(cfg.LoginDelay, 32*cfg.LoginDelay),

		limits: service.Limits{MaxKeySize: cfg.MaxKeySize, MaxValueSize: cfg.MaxValueSize},
	}
	b.loginCtx, b.stopLogins = context.WithCancel(context.Background())
	b.watches = newRegistry(cfg.Metrics, b.notify)
	// Guarded by the registry's mu, which nobody holds yet.
	b.watches.w.MaxPer = cfg.MaxWatchesPerClient
	b.own.topics = srv.Topics
	if span != nil {
		span.b = b
		b.span = span
		cfg.Cluster.SetBroker(span)
	}
	b.completeFn = b.complete
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.inline = srv.NewClient(nil, mqtt.LocalListener, inlineClientID, true)
	b.inline.Properties.ProtocolVersion = 5
	(&binding{b: b}).install(srv.Options)
	if cfg.Listener != nil {
		b.listener = listeners.NewTCPFromListener("tcp", cfg.Listener)
	} else {
		b.listener = listeners.NewTCP(listeners.Config{ID: "tcp", Address: cfg.Listen})
	}
	if err := srv.AddListener(b.listener); err != nil {
		return nil, fmt.Errorf("broker: listen on %s: %w", cfg.Listen, err)
	}
	cfg.Metrics.listener.Store(b.listener)
	if cfg.TLSListen != "" {
		if cfg.TLS == nil {
			_ = srv.Close()
			return nil, errors.New("broker: a TLS listener needs a TLS configuration")
		}
		b.tlsLn = listeners.NewTCP(listeners.Config{ID: "tls", Address: cfg.TLSListen, TLSConfig: cfg.TLS})
		if err := srv.AddListener(b.tlsLn); err != nil {
			_ = srv.Close()
			return nil, fmt.Errorf("broker: TLS listen on %s: %w", cfg.TLSListen, err)
		}
		cfg.Metrics.tlsListener.Store(b.tlsLn)
	}
	if err := b.addWebSockets(); err != nil {
		_ = srv.Close()
		return nil, err
	}
	return b, nil
}

// readLoops returns the number of read loops Config.ReadLoops n asks for:
// by default one per CPU where the system has them, none elsewhere (a
// number asked for where there are none is refused with a warning).
func readLoops(n int) int {
	switch {
	case n < 0:
		return 0
	case n == 0 && !mqtt.ReadLoopsAvailable:
		return 0
	case n == 0:
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// Addr returns the address the MQTT listener is bound to.
func (b *Broker) Addr() string { return b.listener.Address() }

// Accepting returns nil while the MQTT listeners accept connections, and
// the error one of them meets otherwise (it retries). Both are watched:
// out of descriptors, a listener fails only when a client comes to it,
// and clients may come to the TLS one alone.
func (b *Broker) Accepting() error {
	if err := b.listener.Failing(); err != nil {
		return fmt.Errorf("the MQTT listener is not accepting connections: %w", err)
	}
	if b.tlsLn != nil {
		if err := b.tlsLn.Failing(); err != nil {
			return fmt.Errorf("the MQTT TLS listener is not accepting connections: %w", err)
		}
	}
	return b.webSocketsAccepting()
}

// TLSAddr returns the address the TLS listener is bound to, or "".
func (b *Broker) TLSAddr() string {
	if b.tlsLn == nil {
		return ""
	}
	return b.tlsLn.Address()
}

// Notifier returns the KEYNOTIFY registry, for the engine.
func (b *Broker) Notifier() engine.Notifier { return b.watches }

// Start starts serving clients; requests go to store.
func (b *Broker) Start(store Store) error {
	if store == nil {
		return errors.New("broker: no store")
	}
	b.store = store
	return b.srv.Serve()
}

// Drain makes the broker refuse new state store requests, as the first
// step of a graceful shutdown. When it returns, every request the broker
// accepted has been submitted to the store.
func (b *Broker) Drain() {
	b.drainMu.Lock()
	b.draining = true
	b.drainMu.Unlock()
}

// Close disconnects every client and closes the listener. It waits up to
// grace for the connected clients to acknowledge the messages already
// sent to them (responses, notifications, routed messages); messages
// queued for sessions without a connection are not waited for.
func (b *Broker) Close(grace time.Duration) error {
	b.stopLogins()
	b.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	_ = b.srv.AwaitAcknowledgements(ctx)
	cancel()
	var err error
	b.closeOnce.Do(func() {
		err = b.srv.Close()
		b.cancel()
	})
	return err
}

// notify delivers a notification to cl, the connection that registered
// for it, and to nobody else: through cl's subscription that matches the
// topic when it has one (with that subscription's QoS, options and
// identifiers), and otherwise as through a QoS 1 subscription to the
// topic itself, as the vendor's broker does for clients that register
// without subscribing. cl's write loop sends it.
func (b *Broker) notify(cl *mqtt.Client, pk *packets.Packet) {
	pk.FixedHeader.Type = packets.Publish
	pk.Origin = inlineClientID
	pk.Created = time.Now().Unix()
	sub, ok := b.subscriptionOf(cl.ID, pk.TopicName)
	if !ok {
		sub = packets.Subscription{Filter: pk.TopicName, Qos: 1}
	}
	_, err := b.srv.Deliver(cl, sub, pk, mqtt.Delivery{})
	b.delivered(cl, pk, err)
}

// publishWithAck publishes pk, and ack (the PUBACK of requester's request)
// with it: when requester is among the subscribers, both go out in one
// write; otherwise ack goes alone. When requester is the only subscriber
// (the usual response topic), its own route, kept on its connection,
// spares the lookups by topic and client id. The caller's goroutine writes to the
// requester when the requester's write loop has nothing queued: with now
// set it is the requester's reader (the result was ready at once) and
// waits for the connection; otherwise it writes what the connection takes
// without waiting and leaves the rest to the write loop. The other
// subscribers' write loops write to them. Packets are passed by
// pointer: one is 800 bytes, and copies of it made the goroutine stacks of
// the request path grow.
//
// owner, if not nil, owns the memory pk refers to (see reply); the broker
// retains it for every copy it keeps. publishWithAck reports whether the
// caller may release its own hold: not after the broker's general routing,
// whose copies do not count themselves. pk.Created is set to now unless
// the caller set it.
func (b *Broker) publishWithAck(pk *packets.Packet, requester *mqtt.Client, ack *packets.Packet, now bool, owner packets.Owner) bool {
	pk.FixedHeader.Type = packets.Publish
	pk.Origin = inlineClientID
	if pk.Created == 0 {
		pk.Created = time.Now().Unix()
	}
	own, rt := b.forRequester(requester, pk.TopicName)
	if own != nil {
		pk.Owner = owner
		sent, err := b.deliverOwn(requester, own.sub, pk, ack, now)
		b.delivered(requester, pk, err)
		if !sent {
			b.sendAck(requester, ack, now)
		}
		return true
	}
	// With authentication, a response reaches its requester only, through
	// a subscription of its own (not a shared one).
	isolated := b.cfg.Auth != nil
	if rt.General && !isolated {
		b.sendAck(requester, ack, now)
		b.inject(pk)
		return false
	}
	pk.Owner = owner
	// The targets share pk's property slices; nothing on the way
	// modifies them.
	for _, t := range rt.Clients {
		if isolated && t.ID != requester.ID {
			continue
		}
		cl, ok := b.srv.Clients.Get(t.ID)
		if !ok {
			continue
		}
		var err error
		if cl == requester {
			var sent bool
			if len(rt.Clients) == 1 {
				sent, err = b.deliver(cl, t.Sub, pk, ack, now)
			} else {
				sent, err = b.deliverCopy(cl, t.Sub, pk, ack, now)
			}
			if sent {
				ack = nil
			}
		} else {
			_, err = b.srv.Deliver(cl, t.Sub, pk, mqtt.Delivery{})
		}
		b.delivered(cl, pk, err)
	}
	b.sendAck(requester, ack, now)
	return true
}

// delivered logs a delivery that failed.
func (b *Broker) delivered(cl *mqtt.Client, pk *packets.Packet, err error) {
	if err != nil {
		b.log.Debug("message not delivered", "client", cl.ID, "topic", pk.TopicName, "err", err)
	}
}

// deliver prepares out for cl, its only receiver, in place and writes it
// with ack before it (see publishWithAck for now). It reports whether
// ack was sent. Deliver copies what it queues: the caller's call, which
// holds out and ack, is recycled after this.
func (b *Broker) deliver(cl *mqtt.Client, sub packets.Subscription, out, ack *packets.Packet, now bool) (bool, error) {
	return b.srv.Deliver(cl, sub, out, mqtt.Delivery{Ack: ack, Now: true, Wait: now})
}

// deliverOwn is deliver on a requester's own route, whose topic the
// binding's Allow checked when the route was made.
func (b *Broker) deliverOwn(cl *mqtt.Client, sub packets.Subscription, out, ack *packets.Packet, now bool) (bool, error) {
	return b.srv.Deliver(cl, sub, out, mqtt.Delivery{Ack: ack, Now: true, Wait: now, Checked: true})
}

// deliverCopy is deliver for a packet that has other receivers: a copy
// of it is prepared for cl. It is a function of its own so that the
// copy (800 bytes) is not in the frame of every response.
//
//go:noinline
func (b *Broker) deliverCopy(cl *mqtt.Client, sub packets.Subscription, pk, ack *packets.Packet, now bool) (bool, error) {
	out := *pk
	return b.deliver(cl, sub, &out, ack, now)
}

// inject publishes pk through the broker's own routing, which changes
// it.
func (b *Broker) inject(pk *packets.Packet) {
	pk.PacketID = 1 // any non-zero id; the broker's own publishes are never acknowledged
	if err := b.srv.InjectPacket(b.inline, pk); err != nil {
		b.log.Warn("publish failed", "topic", pk.TopicName, "err", err)
	}
}

// sendAck writes ack to cl now (waiting for the connection if now is
// set), or queues it for cl's write loop.
func (b *Broker) sendAck(cl *mqtt.Client, ack *packets.Packet, now bool) {
	if ack == nil {
		return
	}
	if written, _ := cl.WriteNow(now, ack); written || cl.Queue(ack) {
		return
	}
	// The client's queue is full: write it here rather than lose it.
	b.writeAck(cl, ack)
}

func (b *Broker) writeAck(cl *mqtt.Client, ack *packets.Packet) {
	if ack == nil {
		return
	}
	if err := cl.Write(ack); err != nil {
		b.log.Debug("acknowledgement not sent", "client", cl.ID, "err", err)
	}
}

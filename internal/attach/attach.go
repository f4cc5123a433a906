package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
	"golang.org/x/time/rate"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// Attacher serves the state store to the clients of another MQTT 5
// broker, as one of its clients. Create it with New, start it with Start
// and stop it with Drain and Close.
type Attacher struct {
	cfg     Config
	url     *url.URL
	log     *slog.Logger
	metrics *Metrics
	limits  service.Limits
	watches *registry
	recent  *recent
	// presence is nil without a presence source.
	presence *presenceSource
	store    service.Store
	queue    *outbox
	cm       *autopaho.ConnectionManager

	// ctx is handed to the store with every request; cancelled by Close.
	ctx    context.Context
	cancel context.CancelFunc
	// refuseLog limits the log lines about refused requests.
	refuseLog *rate.Limiter

	mu         sync.Mutex
	connected  bool  // guarded by mu
	subscribed bool  // guarded by mu; on the current connection
	lastErr    error // guarded by mu; why dss is not connected or subscribed
	conn       int   // guarded by mu; counts the connections, for the subscribers

	// drainMu is held shared by every request from its draining check to
	// its submission, so that Drain returns only once no request taken
	// can still reach the store.
	drainMu  sync.RWMutex
	draining bool // guarded by drainMu

	// maxPacket is the Maximum Packet Size of the broker's CONNACK on
	// the current connection: the largest response dss may send it; 0,
	// none.
	maxPacket atomic.Uint32
	// workers counts the goroutines Close waits for: the lease sweeper,
	// subscribers.
	workers   sync.WaitGroup
	closeOnce sync.Once
}

// New checks cfg and returns an attacher that is ready to Start.
func New(cfg Config) (*Attacher, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	u, err := BrokerURL(cfg.Broker)
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	a := &Attacher{
		cfg:       cfg,
		url:       u,
		log:       cfg.Logger.With("component", "attach"),
		metrics:   cfg.Metrics,
		limits:    service.Limits{MaxKeySize: cfg.MaxKeySize, MaxValueSize: cfg.MaxValueSize},
		recent:    newRecent(cfg.RetryWindow, time.Now),
		presence:  newPresenceSource(cfg.Presence),
		queue:     newOutbox(cfg.MaxQueuedBytes),
		refuseLog: rate.NewLimiter(rate.Every(time.Second), 10),
		lastErr:   errors.New("not connected to the broker yet"),
	}
	cfg.Metrics.queued.Store(a.queue)
	a.watches = newRegistry(cfg.Metrics, cfg.Lease, time.Now, a.publishNotification)
	a.watches.setMaxPerClient(cfg.MaxWatchesPerClient)
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

// Notifier returns the KEYNOTIFY registry, for the engine.
func (a *Attacher) Notifier() engine.Notifier { return a.watches }

// Broker returns the URL of the broker dss is attached to.
func (a *Attacher) Broker() string { return a.url.String() }

// Start connects to the broker, and keeps connecting while it runs;
// requests go to store. It returns once the first attempt is under way:
// Ready says when dss serves.
func (a *Attacher) Start(store service.Store) error {
	if store == nil {
		return errors.New("attach: no store")
	}
	a.store = store
	cfg := a.cfg
	backoff := autopaho.NewExponentialBackoff(cfg.ReconnectMin, max(cfg.ReconnectMax, cfg.ReconnectMin+time.Millisecond), cfg.ReconnectMin, 2)
	cc := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{a.url},
		TlsCfg:                        cfg.TLS,
		KeepAlive:                     uint16(cfg.KeepAlive / time.Second),
		CleanStartOnInitialConnection: false,
		SessionExpiryInterval:         uint32(cfg.SessionExpiry / time.Second),
		ReconnectBackoff:              backoff,
		ConnectTimeout:                10 * time.Second,
		Queue:                         a.queue,
		OnConnectionUp:                a.connectionUp,
		OnConnectionDown:              a.connectionDown,
		OnConnectError:                a.connectError,
		ConnectUsername:               cfg.Username,
		ConnectPassword:               cfg.Password,
		// Leaving on purpose ends the session: the broker would otherwise
		// keep sending a share of the requests to it.
		DisconnectPacketBuilder: func() *paho.Disconnect {
			zero := uint32(0)
			return &paho.Disconnect{ReasonCode: 0, Properties: &paho.DisconnectProperties{SessionExpiryInterval: &zero}}
		},
		ClientConfig: paho.ClientConfig{
			ClientID:          cfg.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){a.received},
			OnClientError: func(err error) {
				a.log.Debug("broker connection error", "err", err)
			},
			OnServerDisconnect: func(d *paho.Disconnect) {
				reason := ""
				if d.Properties != nil {
					reason = d.Properties.ReasonString
				}
				a.log.Warn("the broker ended dss's connection", "broker", a.url.Redacted(), "code", fmt.Sprintf("%#x", d.ReasonCode), "reason", reason)
			},
		},
	}
	cm, err := autopaho.NewConnection(a.ctx, cc)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	a.cm = cm
	if a.cfg.Lease > 0 {
		a.workers.Add(1)
		go a.sweepLeases(min(a.cfg.Lease/4, time.Minute))
	}
	return nil
}

// Ready returns nil while dss is connected to the broker and subscribed to
// the request topic, and why not otherwise.
func (a *Attacher) Ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.connected && a.subscribed {
		return nil
	}
	return fmt.Errorf("not serving the broker %s: %w", a.url.Redacted(), a.lastErr)
}

// connectionUp subscribes to the request topic (and the presence source's
// topics) on a new connection. The broker may have kept the subscription
// with dss's session; subscribing again changes nothing then.
func (a *Attacher) connectionUp(cm *autopaho.ConnectionManager, ack *paho.Connack) {
	a.metrics.Connections.Inc()
	a.metrics.Connected.Set(1)
	var maxPacket uint32
	if ack.Properties != nil && ack.Properties.MaximumPacketSize != nil {
		maxPacket = *ack.Properties.MaximumPacketSize
	}
	a.maxPacket.Store(maxPacket)
	a.mu.Lock()
	first := a.conn == 0
	a.conn++
	conn := a.conn
	a.connected, a.subscribed = true, false
	a.lastErr = errors.New("subscribing to the request topic")
	a.mu.Unlock()
	switch {
	case !ack.SessionPresent && !first:
		a.metrics.SessionsLost.Inc()
		a.log.Warn("reconnected to the broker, which had not kept dss's session: requests it held for dss were lost", "broker", a.url.Redacted())
	default:
		a.log.Info("connected to the broker", "broker", a.url.Redacted(), "client_id", a.cfg.ClientID, "session_present", ack.SessionPresent)
	}
	a.workers.Add(1)
	go func() {
		defer a.workers.Done()
		a.subscribe(cm, conn)
	}()
}

// subscribe subscribes on connection conn until the broker grants it, the
// connection ends or the attacher closes.
func (a *Attacher) subscribe(cm *autopaho.ConnectionManager, conn int) {
	subs := []paho.SubscribeOptions{{Topic: a.cfg.requestFilter(), QoS: 1}}
	if a.presence != nil {
		for _, f := range a.presence.filters {
			subs = append(subs, paho.SubscribeOptions{Topic: f, QoS: 1})
		}
	}
	pause := a.cfg.ReconnectMin
	for {
		ctx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
		ack, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: subs})
		cancel()
		if err == nil {
			err = refusedSubscription(ack, subs)
		}
		a.mu.Lock()
		current := a.conn == conn && a.connected
		if current && err == nil {
			a.subscribed, a.lastErr = true, nil
		} else if current {
			a.lastErr = err
		}
		a.mu.Unlock()
		if !current || a.ctx.Err() != nil {
			return
		}
		if err == nil {
			a.metrics.Subscribed.Set(1)
			a.log.Info("serving the state store's requests", "topic", a.cfg.requestFilter())
			return
		}
		a.log.Error("subscription to the request topic failed; retrying", "topic", a.cfg.requestFilter(), "err", err, "retry_in", pause)
		select {
		case <-a.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, a.cfg.ReconnectMax)
	}
}

// refusedSubscription returns the error of a SUBACK that refused one of
// subs.
func refusedSubscription(ack *paho.Suback, subs []paho.SubscribeOptions) error {
	if ack == nil || len(ack.Reasons) != len(subs) {
		return errors.New("the broker answered the subscription with a malformed SUBACK")
	}
	for i, r := range ack.Reasons {
		if r >= 0x80 {
			return fmt.Errorf("the broker refused the subscription to %s with reason code %#x (is dss allowed to read it? does the broker support shared subscriptions?)", subs[i].Topic, r)
		}
	}
	return nil
}

// connectionDown records a lost connection; autopaho reconnects.
func (a *Attacher) connectionDown() bool {
	a.metrics.ConnectionLosses.Inc()
	a.metrics.Connected.Set(0)
	a.metrics.Subscribed.Set(0)
	a.mu.Lock()
	a.connected, a.subscribed = false, false
	a.lastErr = errors.New("the connection to the broker was lost; reconnecting")
	a.mu.Unlock()
	if a.ctx.Err() == nil {
		a.log.Warn("lost the connection to the broker; reconnecting", "broker", a.url.Redacted())
	}
	return true
}

// connectError records a failed attempt to connect.
func (a *Attacher) connectError(err error) {
	if a.ctx.Err() != nil {
		return
	}
	a.metrics.ConnectFailures.Inc()
	var refused *autopaho.ConnackError
	if errors.As(err, &refused) {
		reason := refused.Reason
		if reason == "" {
			reason = connackReasons[refused.ReasonCode]
		}
		err = fmt.Errorf("the broker refused dss's connection with reason code %#x (%s)", refused.ReasonCode, reason)
		a.log.Error("the broker refused dss's connection; retrying", "broker", a.url.Redacted(), "code", fmt.Sprintf("%#x", refused.ReasonCode), "reason", reason)
	} else {
		a.log.Warn("cannot connect to the broker; retrying", "broker", a.url.Redacted(), "err", err)
	}
	a.mu.Lock()
	a.lastErr = err
	a.mu.Unlock()
}

// connackReasons names the reason codes of a CONNACK that refuses
// (MQTT 5, 3.2.2.2) that a broker's configuration causes.
var connackReasons = map[byte]string{
	0x80: "unspecified error",
	0x84: "unsupported protocol version: the broker must speak MQTT 5",
	0x85: "client identifier not valid",
	0x86: "bad user name or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8C: "bad authentication method",
	0x9C: "use another server",
	0x9D: "server moved",
	0x9F: "connection rate exceeded",
}

// received takes every message the broker sends dss, on paho's goroutine
// that delivers them one at a time, in order: requests, and the presence
// source's news.
func (a *Attacher) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	switch {
	case p.Topic == wire.RequestTopic:
		a.handleRequest(p)
	case a.presence != nil && a.presence.matches(p.Topic):
		if id := a.presence.client(p.Topic, p.Payload); id != "" {
			if n := a.watches.dropClient(id); n > 0 {
				a.metrics.Departures.Inc()
				a.log.Debug("client left or connected anew; its KEYNOTIFY registrations are dropped", "client", id, "registrations", n)
			}
		}
	}
	return true, nil
}

// sweepLeases drops the registrations whose lease ended, every period.
func (a *Attacher) sweepLeases(period time.Duration) {
	defer a.workers.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
			if n := a.watches.expire(); n > 0 {
				a.metrics.LeasesExpired.Add(float64(n))
			}
		}
	}
}

// publish hands a message to the queue of messages for the broker, which
// autopaho keeps while dss is not connected and sends, in order, once it
// is (what its PublishViaQueue does). A message larger than the broker
// takes is dropped here: the broker would end the connection on it, and
// the session would send it again on the next one, and again.
func (a *Attacher) publish(p *paho.Publish) {
	var b bytes.Buffer
	_, err := p.Packet().WriteTo(&b)
	var reason string
	switch limit := a.maxPacket.Load(); {
	case err != nil:
		reason = "unencodable"
	case limit > 0 && b.Len() > int(limit):
		err = fmt.Errorf("%d bytes, more than the broker's Maximum Packet Size of %d", b.Len(), limit)
		reason = "too_large"
	default:
		err = a.queue.Enqueue(&b)
		reason = "outbox_full"
	}
	if err != nil {
		a.metrics.Dropped.WithLabelValues(reason).Inc()
		if a.refuseLog.Allow() {
			a.log.Warn("message for the broker dropped", "topic", p.Topic, "err", err)
		}
	}
}

// publishNotification publishes a notification of key for client.
func (a *Attacher) publishNotification(client string, key, payload []byte, version string) {
	a.publish(&paho.Publish{
		QoS:     1,
		Topic:   wire.NotifyTopic(client, key),
		Payload: payload,
		Properties: &paho.PublishProperties{
			ContentType: wire.ContentType,
			User:        paho.UserProperties{{Key: wire.PropTimestamp, Value: version}},
		},
	})
}

// Drain makes the attacher take no more requests, as the first step of a
// graceful shutdown: it unsubscribes from the request topic, so that the
// broker sends the requests to the other instances of the group, and
// refuses what still arrives. When it returns, every request taken has
// been submitted to the store.
func (a *Attacher) Drain() {
	if a.cm != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := a.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{a.cfg.requestFilter()}}); err == nil {
			a.log.Info("unsubscribed from the request topic")
		}
		cancel()
	}
	a.drainMu.Lock()
	a.draining = true
	a.drainMu.Unlock()
	a.mu.Lock()
	a.subscribed = false
	a.lastErr = errors.New("shutting down")
	a.mu.Unlock()
}

// Close waits up to grace for the responses and notifications queued to
// be handed to the broker, then disconnects (ending dss's session there)
// and stops.
func (a *Attacher) Close(grace time.Duration) error {
	a.Drain()
	var err error
	a.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if a.cm != nil {
			select {
			case <-a.queue.WaitForEmpty():
			case <-ctx.Done():
				a.log.Warn("closing with messages for the broker still queued")
			}
			// PublishViaQueue's last message is written before the queue
			// is empty; Disconnect sends DISCONNECT after it.
			if derr := a.cm.Disconnect(ctx); derr != nil {
				err = fmt.Errorf("attach: disconnect: %w", derr)
			}
		}
		a.cancel()
		a.workers.Wait()
		a.metrics.Connected.Set(0)
		a.metrics.Subscribed.Set(0)
	})
	return err
}

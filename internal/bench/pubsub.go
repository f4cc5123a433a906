package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/procstat"
)

// PubSubReport is the result of a pubsub run: ordinary MQTT messages from
// publishers on --server to subscribers on --sub-server (another node of
// a cluster, or the same server). Latencies are in microseconds, from the
// publish's write to its receipt by a subscriber.
type PubSubReport struct {
	Publishers  int    `json:"publishers"`
	Subscribers int    `json:"subscribers"`
	QoS         byte   `json:"qos"`
	SubServer   string `json:"sub_server"`
	// Deliveries counts the messages the subscribers received of those
	// published in the window, and Lost those that never came.
	Deliveries int64 `json:"deliveries"`
	Lost       int64 `json:"lost"`
	// Puback is the publishers' round trip of a QoS 1 PUBACK.
	Puback *Latency `json:"puback_us,omitempty"`
	// ReceiverCPUPerMessage is the CPU time of the subscribers' server
	// (--sub-server-pid) per message published in the window, when it is
	// another process than --server-pid.
	ReceiverCPUPerMessage *float64 `json:"receiver_cpu_us_per_message,omitempty"`
}

// pubsubHeader is the start of every message's payload: the publisher's
// index, its sequence number and the time it was written (ns since the
// run's base).
const pubsubHeader = 4 + 8 + 8

// pubsubTopic is the topic of publisher i's messages.
func pubsubTopic(cfg *Config, i int) string {
	return "bench/" + cfg.ClientID + "/" + strconv.Itoa(i)
}

// runPubSub measures publish/subscribe: every publisher keeps --inflight
// messages between its publish and their receipt by the first subscriber,
// and every subscriber receives every message.
func runPubSub(ctx context.Context, cfg *Config, progress io.Writer) (*Report, error) {
	subCfg := *cfg
	if cfg.SubServer != "" {
		subCfg.Server = cfg.SubServer
	}
	filter := "bench/" + cfg.ClientID + "/#"
	fmt.Fprintf(progress, "connecting %d subscribers to %s\n", cfg.Subscribers, subCfg.Server)
	subs, err := dialAll(ctx, &subCfg, cfg.ClientID+"-sub", cfg.Subscribers, cfg.QoS, func(string) []string { return []string{filter} })
	if err != nil {
		return nil, err
	}
	defer closeAll(subs)
	fmt.Fprintf(progress, "connecting %d publishers to %s\n", cfg.Clients, cfg.Server)
	pubs, err := dialAll(ctx, cfg, cfg.ClientID+"-pub", cfg.Clients, 1, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(pubs)
	for _, c := range pubs {
		if cfg.QoS > 0 && cfg.Inflight > c.receiveMax {
			return nil, fmt.Errorf("bench: --inflight %d is more than the server's Receive Maximum of %d", cfg.Inflight, c.receiveMax)
		}
	}

	rep := newReport(cfg)
	rep.Keys = 0
	ph := &phase{cfg: cfg, base: time.Now(), t0: int64(cfg.Warmup), t1: int64(cfg.Warmup + cfg.Duration)}
	ps := &pubsubRun{ph: ph, cfg: cfg, hist: newHistograms(len(subs) + len(pubs))}
	ps.slots = make([]chan struct{}, len(pubs))
	for i := range ps.slots {
		ps.slots[i] = make(chan struct{}, cfg.Inflight)
	}
	readers := make([]*pubsubReader, len(subs))
	var rwg sync.WaitGroup
	for i, c := range subs {
		readers[i] = &pubsubReader{ps: ps, c: c, first: i == 0, rec: ps.hist.recorder(i), last: make([]uint64, len(pubs))}
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			readers[i].run()
		}()
	}
	fmt.Fprintf(progress, "running %s: %v warm-up, %v measured\n", cfg.Workload, cfg.Warmup, cfg.Duration)
	// The CPU of the publishers' server and of the subscribers', over the
	// window.
	var sender, receiver [2]procstat.Reading
	var swg sync.WaitGroup
	swg.Add(2)
	go func() {
		defer swg.Done()
		sender = sampleWindow(ctx, ph, cfg.ServerPID)
	}()
	go func() {
		defer swg.Done()
		receiver = sampleWindow(ctx, ph, cfg.SubServerPID)
	}()
	writers := make([]*pubsubWriter, len(pubs))
	puback := newHistograms(len(pubs))
	var pwg sync.WaitGroup
	for i, c := range pubs {
		writers[i] = &pubsubWriter{ps: ps, c: c, i: i, topic: pubsubTopic(cfg, i), rec: puback.recorder(i)}
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			writers[i].run(ctx)
		}()
	}
	pwg.Wait()
	swg.Wait()
	// The messages of the window have their timeout to arrive.
	for deadline := time.Now().Add(cfg.Timeout); time.Now().Before(deadline) && ctx.Err() == nil; {
		if ps.delivered.Load() >= ps.published.Load()*int64(len(subs)) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	ph.stopped.Store(true)
	for _, c := range subs {
		_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	rwg.Wait()
	var total counters
	for _, w := range writers {
		w.rec.flush()
		total.add(&w.cnt)
	}
	for _, r := range readers {
		r.rec.flush()
		total.add(&r.cnt)
	}
	rep.addErrors(&total)
	rep.Timeouts = total.timeouts
	rep.Sent = ps.sent.Load()
	rep.Requests = ps.published.Load()
	pr := &PubSubReport{Publishers: len(pubs), Subscribers: len(subs), QoS: cfg.QoS, SubServer: subCfg.Server,
		Deliveries: ps.delivered.Load(), Puback: latencyOf(puback.merged())}
	if want := rep.Requests * int64(len(subs)); want > pr.Deliveries {
		pr.Lost = want - pr.Deliveries
	}
	rep.PubSub = pr
	rep.Seconds = sender[1].At.Sub(sender[0].At).Seconds()
	if rep.Seconds > 0 {
		rep.Throughput = float64(rep.Requests) / rep.Seconds
	}
	rep.Latency = latencyOf(ps.hist.merged())
	rep.addUsage(sender[0], sender[1], rep.Requests)
	if cfg.SubServerPID != 0 && cfg.SubServerPID != cfg.ServerPID && receiver[0].ServerOK && receiver[1].ServerOK && rep.Requests > 0 {
		per := (receiver[1].Server - receiver[0].Server).Seconds() * 1e6 / float64(rep.Requests)
		pr.ReceiverCPUPerMessage = &per
	}
	return rep, nil
}

// pubsubRun is what the publishers and subscribers of a run share.
type pubsubRun struct {
	ph   *phase
	cfg  *Config
	hist *histograms
	// slots[i] holds a token for each message of publisher i not yet
	// received by the first subscriber.
	slots                      []chan struct{}
	sent, published, delivered atomic.Int64
}

// pubsubWriter is one publisher.
type pubsubWriter struct {
	ps    *pubsubRun
	c     *conn
	i     int
	topic string
	rec   recorder
	cnt   counters
	seq   uint64
	out   []byte
}

func (w *pubsubWriter) run(ctx context.Context) {
	ps, ph, cfg := w.ps, w.ps.ph, w.ps.cfg
	acks := make(chan struct{})
	sentAt := make([]int64, 65536)
	if cfg.QoS > 0 {
		go func() {
			defer close(acks)
			w.readAcks(sentAt)
		}()
	} else {
		close(acks)
	}
	defer func() {
		_ = w.c.nc.SetReadDeadline(time.Unix(1, 0))
		<-acks
	}()
	payload := make([]byte, max(cfg.ValueSize, pubsubHeader))
	for ctx.Err() == nil {
		now := ph.now()
		if now >= ph.t1 {
			return
		}
		select {
		case ps.slots[w.i] <- struct{}{}:
		case <-time.After(cfg.Timeout):
			// A message the first subscriber never got: lost. Its slot
			// goes back.
			w.cnt.timeouts++
			<-ps.slots[w.i]
			continue
		case <-ctx.Done():
			return
		}
		w.seq++
		now = ph.now()
		binary.BigEndian.PutUint32(payload, uint32(w.i))
		binary.BigEndian.PutUint64(payload[4:], w.seq)
		binary.BigEndian.PutUint64(payload[12:], uint64(now))
		id := uint16(w.seq%65535) + 1
		sentAt[id] = now
		w.out = appendPublish(w.out[:0], w.topic, cfg.QoS, id, payload)
		_ = w.c.nc.SetWriteDeadline(time.Now().Add(ph.writeStall()))
		if _, err := w.c.nc.Write(w.out); err != nil {
			w.cnt.fail(errConnection, func() string { return "write: " + err.Error() }, -1)
			return
		}
		ps.sent.Add(1)
		if now >= ph.t0 && now < ph.t1 {
			ps.published.Add(1)
		}
	}
}

// readAcks reads the publisher's PUBACKs and records their round trip.
func (w *pubsubWriter) readAcks(sentAt []int64) {
	ph := w.ps.ph
	for {
		first, body, err := w.c.readOne()
		if err != nil {
			if !ph.stopped.Load() && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) {
				w.cnt.fail(errConnection, func() string { return "read: " + err.Error() }, -1)
			}
			return
		}
		if first>>4 != typePuback {
			continue
		}
		id, reason, err := parseAck(body)
		if err != nil || reason >= 0x80 {
			w.cnt.fail(errPuback, func() string { return fmt.Sprintf("PUBACK reason %#x", reason) }, -1)
			continue
		}
		if at := sentAt[id]; at >= ph.t0 && at < ph.t1 {
			w.rec.record(ph.now() - at)
		}
	}
}

// pubsubReader is one subscriber.
type pubsubReader struct {
	ps    *pubsubRun
	c     *conn
	first bool // its receipts free the publishers' slots
	rec   recorder
	cnt   counters
	last  []uint64 // by publisher: the last sequence number received
}

func (r *pubsubReader) run() {
	nr := notificationReader{ph: r.ps.ph, c: r.c}
	nr.run(r.message)
	r.cnt.add(&nr.cnt)
}

func (r *pubsubReader) message(p *publish, now int64) {
	ps := r.ps
	if len(p.payload) < pubsubHeader || !strings.HasPrefix(string(p.topic), "bench/") {
		r.cnt.fail(errTopic, func() string { return fmt.Sprintf("message on %q", p.topic) }, -1)
		return
	}
	pub := int(binary.BigEndian.Uint32(p.payload))
	seq := binary.BigEndian.Uint64(p.payload[4:])
	at := int64(binary.BigEndian.Uint64(p.payload[12:]))
	if pub >= len(r.last) {
		r.cnt.fail(errNotify, func() string { return fmt.Sprintf("a message of publisher %d", pub) }, -1)
		return
	}
	if seq <= r.last[pub] {
		r.cnt.fail(errNotify, func() string { return fmt.Sprintf("message %d of publisher %d after %d", seq, pub, r.last[pub]) }, -1)
	}
	r.last[pub] = seq
	if r.first {
		select {
		case <-ps.slots[pub]:
		default:
		}
	}
	if at >= ps.ph.t0 && at < ps.ph.t1 {
		ps.delivered.Add(1)
		r.rec.record(now - at)
	}
}

// appendPublish encodes a PUBLISH of payload to topic without properties.
func appendPublish(b []byte, topic string, qos byte, id uint16, payload []byte) []byte {
	n := 2 + len(topic) + 1 + len(payload)
	if qos > 0 {
		n += 2
	}
	b = append(b, typePublish<<4|qos<<1)
	b = appendVBI(b, n)
	b = appendBinary(b, topic)
	if qos > 0 {
		b = binary.BigEndian.AppendUint16(b, id)
	}
	b = append(b, 0) // no properties
	return append(b, payload...)
}

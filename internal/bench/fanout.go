package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/procstat"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// NotifyReport is the result of a keynotify or watch run. Latencies are
// in microseconds, from the writer's SET to the receipt of the
// notification.
type NotifyReport struct {
	Watchers int `json:"watchers"`
	// Registration is what the watchers registered for: "key" or
	// "pattern".
	Registration string `json:"registration"`
	// Writers is the number of writing connections of a watch run; a
	// keynotify run has one.
	Writers int `json:"writers,omitempty"`
	// Notifications counts the SETs of the measured window (of a watch
	// run, those answered +OK); Complete those that reached every
	// watcher within the timeout (keynotify).
	Notifications int64 `json:"notifications"`
	Complete      int64 `json:"complete"`
	// Deliveries counts the notifications received in the window (of a
	// watch run, those of the SETs written in the window).
	Deliveries int64 `json:"deliveries"`
	// Missing counts the SETs of a watch run answered +OK whose
	// notification never came; each is an error too.
	Missing int64 `json:"missing,omitempty"`
	// All is the time until the last watcher received a notification
	// (keynotify).
	All *Latency `json:"all_watchers_us,omitempty"`
	// Each is the time until each single delivery.
	Each *Latency `json:"each_delivery_us,omitempty"`
	// Set is the round trip of the writers' SETs.
	Set *Latency `json:"set_us,omitempty"`
}

func (n *NotifyReport) writeText(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "window      %.2fs after %.2fs of warm-up\n", r.Seconds, r.WarmupSeconds)
	if n.Writers > 0 {
		fmt.Fprintf(b, "notified    %d deliveries of %d SETs (%.0f/s), %d never notified\n",
			n.Deliveries, n.Notifications, r.Throughput, n.Missing)
	} else {
		fmt.Fprintf(b, "fan-out     %d notifications to %d watchers, %d reached all of them, %d deliveries\n",
			n.Notifications, n.Watchers, n.Complete, n.Deliveries)
	}
	for _, l := range []struct {
		name string
		l    *Latency
	}{{"all", n.All}, {"each", n.Each}, {"set", n.Set}} {
		if l.l != nil {
			fmt.Fprintf(b, "%-11s p50 %s  p90 %s  p99 %s  max %s\n", l.name, us(l.l.P50), us(l.l.P90), us(l.l.P99), us(l.l.Max))
		}
	}
}

// fanout is the state the writer and the watchers of a keynotify run
// share. The notification in flight is identified by its sequence number,
// which its value carries.
type fanout struct {
	ph       *phase
	watchers int
	// state is the current sequence number << 24 | how many watchers
	// received it, so that a watcher counts only towards the notification
	// it received.
	state  atomic.Uint64
	sentAt atomic.Int64
	// done receives the sequence number and the time at which its last
	// watcher received it.
	done chan [2]int64
	each *histograms
}

const fanCountBits = 24

// runKeyNotify measures the fan-out of notifications: watchers register
// for one key, and a writer SETs it, one SET at a time, each after every
// watcher received the previous one (or the timeout passed).
func runKeyNotify(ctx context.Context, cfg *Config, progress io.Writer) (*Report, error) {
	if cfg.Watchers >= 1<<fanCountBits {
		return nil, fmt.Errorf("bench: at most %d watchers", 1<<fanCountBits-1)
	}
	keys := newKeySpace(cfg.KeyPrefix+"notify", 1)
	key := keys.key(0)
	fmt.Fprintf(progress, "connecting %d watchers to %s\n", cfg.Watchers, cfg.Server)
	watchers, err := dialAll(ctx, cfg, cfg.ClientID+"-w", cfg.Watchers, 1, func(id string) []string {
		return []string{wire.NotifyTopicFilter(id)}
	})
	if err != nil {
		return nil, err
	}
	defer closeAll(watchers)
	writers, err := dialAll(ctx, cfg, cfg.ClientID+"-writer", 1, cfg.responseQoS(), nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(writers)
	writer := writers[0]

	regs := keys
	if cfg.Workload.Pattern {
		// A pattern that the key matches, and other keys of the prefix
		// too: a pattern as a user would write it.
		regs = keySpace{prefix: quotePattern(cfg.KeyPrefix+"notify") + "*", n: 1}
	}
	fmt.Fprintf(progress, "registering %d watchers for %q\n", cfg.Watchers, regs.key(0))
	if err := registerAll(ctx, cfg, watchers, regs, cfg.Workload.Pattern, func(int) int { return 0 }); err != nil {
		return nil, err
	}

	rep := newReport(cfg)
	rep.Clients, rep.Keys = 1, 1
	ph := &phase{cfg: cfg, base: time.Now(), t0: int64(cfg.Warmup), t1: int64(cfg.Warmup + cfg.Duration), keys: keys}
	if cfg.Requests > 0 {
		// A counted run measures its notifications from the first.
		ph.t0, ph.t1 = 0, math.MaxInt64
		rep.WarmupSeconds = 0
	}
	f := &fanout{ph: ph, watchers: cfg.Watchers, done: make(chan [2]int64, 2), each: newHistograms(16)}
	ws := make([]*fanWatcher, len(watchers))
	var wg sync.WaitGroup
	for i, c := range watchers {
		ws[i] = &fanWatcher{notificationReader: notificationReader{ph: ph, c: c}, f: f, topic: wire.NotifyTopic(c.id, key), rec: f.each.recorder(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i].run()
		}()
	}
	stopWatchers := func() {
		ph.stopped.Store(true)
		for _, c := range watchers {
			_ = c.nc.SetReadDeadline(time.Unix(1, 0))
		}
		wg.Wait()
	}

	if cfg.Requests > 0 {
		fmt.Fprintf(progress, "running %s: %d notifications\n", cfg.Workload, cfg.Requests)
	} else {
		fmt.Fprintf(progress, "running %s: %v warm-up, %v measured\n", cfg.Workload, cfg.Warmup, cfg.Duration)
	}
	var (
		wcnt    = newCounters(0)
		all     = newHistogram()
		set     = newHistogram()
		nr      = &NotifyReport{Watchers: cfg.Watchers}
		u0, u1  procstat.Reading
		sampled bool
	)
	tpl := newTemplate(opSet, keys, requestArgs{value: makeValue(cfg.ValueSize)}, writer.responseTopic)
	req := make([]byte, 0, len(tpl.pkt))
	var ts []byte
	for seq := uint64(1); ctx.Err() == nil; seq++ {
		now := ph.now()
		if now >= ph.t1 || (cfg.Requests > 0 && int64(seq) > cfg.Requests) {
			break
		}
		if !sampled && now >= ph.t0 {
			u0, _ = procstat.Read(cfg.ServerPID)
			sampled = true
		}
		ts = appendTimestamp(ts[:0], time.Now().UnixMilli())
		req = tpl.appendRequest(req[:0], 1, seq, ts, 0)
		binary.BigEndian.PutUint64(req[tpl.valOff:], seq)
		f.sentAt.Store(now)
		f.state.Store(seq << fanCountBits)
		res, err := writer.call(req, opSet, seq, cfg.ValueSize, ph.base.Add(time.Duration(now)+cfg.Timeout))
		setAt := ph.now()
		measured := now >= ph.t0
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			wcnt.timeouts++
			stopWatchers()
			return nil, fmt.Errorf("bench: the SET of notification %d was not answered within %v", seq, cfg.Timeout)
		case err != nil:
			stopWatchers()
			return nil, fmt.Errorf("bench: writer: %w", err)
		case res.kind != errNone:
			wcnt.fail(res.kind, func() string { return res.sample }, -1)
		case measured:
			_ = set.RecordValue(min(setAt-now, maxLatency))
		}
		if measured {
			nr.Notifications++
		}
		timer := time.NewTimer(time.Until(ph.base.Add(time.Duration(now) + cfg.Timeout)))
	wait:
		for {
			select {
			case d := <-f.done:
				if uint64(d[0]) != seq {
					continue // a late completion of an earlier notification
				}
				if measured {
					nr.Complete++
					_ = all.RecordValue(min(max(d[1]-now, 1), maxLatency))
				}
			case <-timer.C:
				wcnt.timeouts++
			case <-ctx.Done():
			}
			break wait
		}
		timer.Stop()
	}
	if sampled {
		u1, _ = procstat.Read(cfg.ServerPID)
	}
	stopWatchers()

	total := wcnt
	for _, w := range ws {
		w.rec.flush()
		total.add(&w.cnt)
	}
	rep.addErrors(&total)
	rep.Timeouts, rep.Late = total.timeouts, total.late
	nr.Deliveries = total.requests
	nr.All, nr.Each, nr.Set = latencyOf(all), latencyOf(f.each.merged()), latencyOf(set)
	nr.Registration = registration(cfg)
	rep.Requests, rep.Sent = nr.Notifications, nr.Notifications
	rep.Notify = nr
	if sampled {
		rep.Seconds = u1.At.Sub(u0.At).Seconds()
		if rep.Seconds > 0 {
			rep.Throughput = float64(nr.Notifications) / rep.Seconds
		}
		rep.addUsage(u0, u1, nr.Notifications)
	}
	return rep, nil
}

// fanWatcher receives the notifications of one watcher connection.
type fanWatcher struct {
	notificationReader
	f     *fanout
	topic string
	rec   recorder
	last  uint64 // sequence number of the last notification received
}

func (w *fanWatcher) run() { w.notificationReader.run(w.notification) }

// notifyPrefix starts the payload of every SET notification, up to the
// value's length.
var notifyPrefix = resp.AppendBulkString(resp.AppendBulkString(resp.AppendBulkString(
	resp.AppendArrayHeader(nil, 4), "NOTIFY"), "SET"), "VALUE")

// notification checks one notification and counts it towards the
// notification in flight.
func (w *fanWatcher) notification(p *publish, now int64) {
	f := w.f
	if string(p.topic) != w.topic {
		w.cnt.fail(errTopic, func() string { return fmt.Sprintf("message on %q", p.topic) }, -1)
		return
	}
	rest, ok := bytes.CutPrefix(p.payload, notifyPrefix)
	n, okLen := bulkLen(rest)
	switch {
	case !ok || !okLen || n != f.ph.cfg.ValueSize:
		w.cnt.fail(errNotify, func() string { return fmt.Sprintf("notification payload %q", p.payload[:min(len(p.payload), 64)]) }, -1)
		return
	case !p.hasTS || !wellFormedTimestamp(p.ts):
		w.cnt.fail(errTimestamp, func() string { return "notification without a valid __ts" }, -1)
		return
	}
	seq := binary.BigEndian.Uint64(rest[bulkHeaderLen(n):])
	if seq <= w.last {
		w.cnt.fail(errNotify, func() string { return fmt.Sprintf("notification %d after %d", seq, w.last) }, -1)
		return
	}
	w.last = seq
	for {
		st := f.state.Load()
		if st>>fanCountBits != seq {
			w.cnt.late++ // its notification timed out already
			return
		}
		if !f.state.CompareAndSwap(st, st+1) {
			continue
		}
		// Count the deliveries of the notifications sent in the window,
		// as the writer counts the notifications.
		if sentAt := f.sentAt.Load(); sentAt >= f.ph.t0 && sentAt < f.ph.t1 {
			w.cnt.requests++
			w.rec.record(now - sentAt)
		}
		if int(st&(1<<fanCountBits-1))+1 == f.watchers {
			// The last one: every other watcher took its time before
			// its increment, so this later reading bounds them all.
			select {
			case f.done <- [2]int64{int64(seq), f.ph.now()}:
			default:
				// Cannot happen: each notification completes once, and
				// the writer drains the one of an earlier notification
				// that timed out before it waits for the next.
				w.cnt.fail(errNotify, func() string { return "completion not delivered" }, -1)
			}
		}
		return
	}
}

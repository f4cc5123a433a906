package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/procstat"
	"github.com/dssio/dss/internal/wire"
)

// registration names what the watchers of a run register for.
func registration(cfg *Config) string {
	if cfg.Workload.Pattern {
		return "pattern"
	}
	return "key"
}

// watchKeys are the keys of a watch run: watcher i watches the key
// <prefix>watch/<i>/k, or with a pattern <prefix>watch/<i>/*, which no
// other watcher's key matches (the indexes have the same width).
func watchKeys(cfg *Config) (keys, regs keySpace) {
	keys = newKeySpace(cfg.KeyPrefix+"watch/", cfg.Watchers)
	keys.suffix = "/k"
	regs = keys
	if cfg.Workload.Pattern {
		regs.prefix = quotePattern(keys.prefix)
		regs.suffix = "/*"
	}
	return keys, regs
}

// runWatch measures the notification of changes to many watched keys:
// each watcher registers for a key of its own, or for a pattern of its
// own that matches that key; --clients writers keep --inflight SETs each
// in flight on keys picked at random among them. Each SET's value starts
// with the time it was written, and the watcher that receives its
// notification takes the latency from it. Every SET answered +OK must
// be notified: one that is not within the timeout after the writers
// stopped counts as an error.
func runWatch(ctx context.Context, cfg *Config, progress io.Writer) (*Report, error) {
	keys, regs := watchKeys(cfg)
	fmt.Fprintf(progress, "connecting %d watchers and %d writers to %s\n", cfg.Watchers, cfg.Clients, cfg.Server)
	watchers, err := dialAll(ctx, cfg, cfg.ClientID+"-w", cfg.Watchers, 1, func(id string) []string {
		return []string{wire.NotifyTopicFilter(id)}
	})
	if err != nil {
		return nil, err
	}
	defer closeAll(watchers)
	writers, err := dialAll(ctx, cfg, cfg.ClientID+"-writer", cfg.Clients, cfg.responseQoS(), nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(writers)
	for _, c := range writers {
		if cfg.Inflight > c.receiveMax {
			return nil, fmt.Errorf("bench: --inflight %d is more than the server's Receive Maximum of %d", cfg.Inflight, c.receiveMax)
		}
	}
	fmt.Fprintf(progress, "registering %d watchers for %q to %q\n", cfg.Watchers, regs.key(0), regs.key(regs.n-1))
	if err := registerAll(ctx, cfg, watchers, regs, cfg.Workload.Pattern, func(i int) int { return i }); err != nil {
		return nil, err
	}

	rep := newReport(cfg)
	rep.Keys = cfg.Watchers
	seconds := int((cfg.Warmup+cfg.Duration)/time.Second) + 2
	ph := &phase{
		cfg:         cfg,
		base:        time.Now(),
		t0:          int64(cfg.Warmup),
		t1:          int64(cfg.Warmup + cfg.Duration),
		keys:        keys,
		value:       makeValue(cfg.ValueSize),
		hist:        newHistograms(16),
		verb:        opSet,
		stampValues: true,
	}
	if cfg.Requests > 0 {
		ph.t0, ph.t1 = 0, math.MaxInt64
		ph.budget = new(atomic.Int64)
		ph.budget.Store(cfg.Requests)
		rep.WarmupSeconds = 0
		seconds = 0
	}
	ph.seconds = seconds
	ph.hist.withSeconds(seconds)

	var delivered atomic.Int64
	each := newHistograms(16)
	ws := make([]*keyWatcher, len(watchers))
	var wg sync.WaitGroup
	for i, c := range watchers {
		ws[i] = &keyWatcher{
			notificationReader: notificationReader{ph: ph, c: c},
			topic:              wire.NotifyTopic(c.id, keys.key(i)),
			rec:                each.recorder(i),
			delivered:          &delivered,
		}
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

	var u [2]procstat.Reading
	var cnt counters
	if cfg.Requests > 0 {
		fmt.Fprintf(progress, "running %s: %d SETs\n", cfg.Workload, cfg.Requests)
		u[0], _ = procstat.Read(cfg.ServerPID)
		cnt = runPhase(ctx, ph, writers, rand.Uint64())
	} else {
		fmt.Fprintf(progress, "running %s: %v warm-up, %v measured\n", cfg.Workload, cfg.Warmup, cfg.Duration)
		sampled := make(chan [2]procstat.Reading, 1)
		var sw sync.WaitGroup
		sw.Add(1)
		go func() {
			defer sw.Done()
			sampled <- sampleWindow(ctx, ph, cfg.ServerPID)
		}()
		cnt = runPhase(ctx, ph, writers, rand.Uint64())
		sw.Wait()
		u = <-sampled
	}
	// The notifications of the last SETs are on their way.
	deadline := time.Now().Add(cfg.Timeout)
	for delivered.Load() < cnt.applied && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if cfg.Requests > 0 {
		u[1], _ = procstat.Read(cfg.ServerPID)
	}
	stopWatchers()

	nr := &NotifyReport{Watchers: cfg.Watchers, Registration: registration(cfg), Writers: cfg.Clients}
	rep.addCounters(&cnt)
	ph.hist.fillTimeline(rep.Timeline)
	nr.Set = latencyOf(ph.hist.merged())
	nr.Notifications = rep.Outcomes["SET"]["ok"]
	var total counters
	for _, w := range ws {
		w.rec.flush()
		total.add(&w.cnt)
	}
	rep.addErrors(&total)
	nr.Deliveries = total.requests
	if missing := cnt.applied - delivered.Load(); missing > 0 && ctx.Err() == nil {
		nr.Missing = missing
		rep.Errors += missing
		if rep.ErrorsByKind == nil {
			rep.ErrorsByKind, rep.ErrorSamples = make(map[string]int64), make(map[string]string)
		}
		rep.ErrorsByKind[errNotify.String()] += missing
		if rep.ErrorSamples[errNotify.String()] == "" {
			rep.ErrorSamples[errNotify.String()] = fmt.Sprintf("%d of %d SETs answered +OK were not notified within %v", missing, cnt.applied, cfg.Timeout)
		}
	}
	nr.Each = latencyOf(each.merged())
	rep.Notify = nr
	// The figures of the run are the notifications: the report's
	// requests, throughput and latency are theirs.
	rep.Requests, rep.Latency = nr.Deliveries, nr.Each
	rep.Seconds = u[1].At.Sub(u[0].At).Seconds()
	if rep.Seconds > 0 {
		rep.Throughput = float64(nr.Deliveries) / rep.Seconds
	}
	rep.addUsage(u[0], u[1], nr.Deliveries)
	return rep, nil
}

// keyWatcher receives the notifications of one watcher of watch mode, for
// its own key.
type keyWatcher struct {
	notificationReader
	topic     string
	rec       recorder
	delivered *atomic.Int64
}

func (w *keyWatcher) run() { w.notificationReader.run(w.notification) }

// notification checks one notification and records its latency, from the
// time of its SET's write that its value carries.
func (w *keyWatcher) notification(p *publish, now int64) {
	ph := w.ph
	if string(p.topic) != w.topic {
		w.cnt.fail(errTopic, func() string { return fmt.Sprintf("message on %q", p.topic) }, -1)
		return
	}
	rest, ok := bytes.CutPrefix(p.payload, notifyPrefix)
	n, okLen := bulkLen(rest)
	switch {
	case !ok || !okLen || n != ph.cfg.ValueSize:
		w.cnt.fail(errNotify, func() string { return fmt.Sprintf("notification payload %q", p.payload[:min(len(p.payload), 64)]) }, -1)
		return
	case !p.hasTS || !wellFormedTimestamp(p.ts):
		w.cnt.fail(errTimestamp, func() string { return "notification without a valid __ts" }, -1)
		return
	}
	sentAt := int64(binary.BigEndian.Uint64(rest[bulkHeaderLen(n):]))
	if sentAt <= 0 || sentAt > now {
		w.cnt.fail(errNotify, func() string { return fmt.Sprintf("notification of a value written at %d ns, now %d ns", sentAt, now) }, -1)
		return
	}
	w.delivered.Add(1)
	if sentAt >= ph.t0 && sentAt < ph.t1 {
		w.cnt.requests++
		w.rec.record(now - sentAt)
	}
}

package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/procstat"
)

// Run carries out the run that cfg describes against cfg.Server and
// returns its report. Progress lines go to progress. It returns an error
// when the run could not take place (the server cannot be reached, the
// configuration is invalid); errors of individual requests are counted in
// the report instead. When ctx ends early, Run stops and reports what was
// measured until then.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		cfg.ClientID = fmt.Sprintf("bench-%d", os.Getpid())
	}
	if progress == nil {
		progress = io.Discard
	}
	if cfg.ServerPID != 0 {
		// Fail now rather than report no server figures at the end.
		if _, err := procstat.Read(cfg.ServerPID); err != nil {
			return nil, err
		}
	}
	switch cfg.Workload.Mode {
	case ModeKeyNotify:
		return runKeyNotify(ctx, &cfg, progress)
	case ModeWatch:
		return runWatch(ctx, &cfg, progress)
	case ModeIdle:
		return runIdle(ctx, &cfg, progress)
	case ModePubSub:
		return runPubSub(ctx, &cfg, progress)
	}
	return runRequests(ctx, &cfg, progress)
}

func (c *Config) responseQoS() byte {
	if c.ResponseQoS0 {
		return 0
	}
	return 1
}

// runRequests runs the closed-loop modes and fill.
func runRequests(ctx context.Context, cfg *Config, progress io.Writer) (*Report, error) {
	fmt.Fprintf(progress, "connecting %d clients to %s\n", cfg.Clients, cfg.Server)
	conns, err := dialAll(ctx, cfg, cfg.ClientID, cfg.Clients, cfg.responseQoS(), nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	for _, c := range conns {
		if cfg.Inflight > c.receiveMax {
			return nil, fmt.Errorf("bench: --inflight %d is more than the server's Receive Maximum of %d", cfg.Inflight, c.receiveMax)
		}
	}
	rep := newReport(cfg)
	value := makeValue(cfg.ValueSize)
	keys := newKeySpace(cfg.KeyPrefix, cfg.Keys)
	seed := rand.Uint64()

	if cfg.Workload.Mode == ModeFill || cfg.preload() {
		fmt.Fprintf(progress, "storing %d keys\n", cfg.Keys)
		ph := &phase{cfg: cfg, base: time.Now(), t1: math.MaxInt64, keys: keys, value: value,
			hist: newHistograms(16), sequential: true}
		u0, _ := procstat.Read(cfg.ServerPID)
		cnt := runPhase(ctx, ph, conns, seed)
		u1, _ := procstat.Read(cfg.ServerPID)
		if cfg.Workload.Mode == ModeFill {
			rep.WarmupSeconds = 0
			rep.Seconds = u1.At.Sub(u0.At).Seconds()
			rep.addCounters(&cnt)
			rep.Throughput = float64(rep.Requests) / rep.Seconds
			rep.Latency = latencyOf(ph.hist.merged())
			rep.addUsage(u0, u1, rep.Requests)
			return rep, nil
		}
		rep.Preload = &Phase{Requests: cnt.requests, Seconds: u1.At.Sub(u0.At).Seconds(),
			Errors: cnt.totalErrors(), Timeouts: cnt.timeouts}
		rep.addErrors(&cnt)
		rep.Sent += cnt.sent
		rep.Timeouts += cnt.timeouts
		rep.Late += cnt.late
		if ctx.Err() != nil {
			return rep, nil
		}
	}

	w := cfg.Workload
	seconds := int((cfg.Warmup+cfg.Duration)/time.Second) + 2
	ph := &phase{
		cfg:      cfg,
		base:     time.Now(),
		t0:       int64(cfg.Warmup),
		t1:       int64(cfg.Warmup + cfg.Duration),
		keys:     keys,
		value:    value,
		hist:     newHistograms(16).withSeconds(seconds),
		mix:      w.Mix,
		getRatio: w.GetRatio,
		seconds:  seconds,
		// A late response to a preload request must not match a request
		// of this phase.
		seqBase: 1 << 40,
	}
	ph.verb = map[string]verb{"set": opSet, "get": opGet, "del": opDel, "vdel": opVDel}[w.Verb]
	if cfg.Requests > 0 {
		return runCounted(ctx, ph, conns, rep, seed+1, progress)
	}
	fmt.Fprintf(progress, "running %s: %v warm-up, %v measured\n", w, cfg.Warmup, cfg.Duration)
	sampled := make(chan [2]procstat.Reading, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sampled <- sampleWindow(ctx, ph, cfg.ServerPID)
	}()
	cnt := runPhase(ctx, ph, conns, seed+1)
	wg.Wait()
	u := <-sampled
	rep.addCounters(&cnt)
	ph.hist.fillTimeline(rep.Timeline)
	rep.Seconds = u[1].At.Sub(u[0].At).Seconds()
	if rep.Seconds > 0 {
		rep.Throughput = float64(rep.Requests) / rep.Seconds
	}
	rep.Latency = latencyOf(ph.hist.merged())
	rep.addUsage(u[0], u[1], rep.Requests)
	return rep, nil
}

// runCounted measures the whole run of cfg.Requests requests.
func runCounted(ctx context.Context, ph *phase, conns []*conn, rep *Report, seed uint64, progress io.Writer) (*Report, error) {
	fmt.Fprintf(progress, "running %s: %d requests\n", ph.cfg.Workload, ph.cfg.Requests)
	ph.t0, ph.t1 = 0, math.MaxInt64
	ph.seconds = 0
	ph.budget = new(atomic.Int64)
	ph.budget.Store(ph.cfg.Requests)
	rep.WarmupSeconds = 0
	u0, _ := procstat.Read(ph.cfg.ServerPID)
	cnt := runPhase(ctx, ph, conns, seed)
	u1, _ := procstat.Read(ph.cfg.ServerPID)
	rep.addCounters(&cnt)
	rep.Seconds = u1.At.Sub(u0.At).Seconds()
	if rep.Seconds > 0 {
		rep.Throughput = float64(rep.Requests) / rep.Seconds
	}
	rep.Latency = latencyOf(ph.hist.merged())
	rep.addUsage(u0, u1, rep.Requests)
	return rep, nil
}

// sampleWindow reads the CPU usage at the start and the end of the
// measured window, or when ctx ends.
func sampleWindow(ctx context.Context, ph *phase, pid int) [2]procstat.Reading {
	var u [2]procstat.Reading
	for i, at := range []int64{ph.t0, ph.t1} {
		t := time.NewTimer(time.Until(ph.base.Add(time.Duration(at))))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		u[i], _ = procstat.Read(pid)
		if i == 0 && ctx.Err() != nil {
			u[1] = u[0]
			break
		}
	}
	return u
}

// runPhase runs one worker per connection until the phase ends, and
// returns their merged counts.
func runPhase(ctx context.Context, ph *phase, conns []*conn, seed uint64) counters {
	stop := context.AfterFunc(ctx, func() { ph.stopped.Store(true) })
	defer stop()
	workers := make([]*worker, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		w := newWorker(ph, c, i, ph.cfg.Inflight, seed)
		if ph.sequential {
			w.nextKey = i * ph.keys.n / len(conns)
			w.endKey = (i + 1) * ph.keys.n / len(conns)
		}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	wg.Wait()
	total := newCounters(ph.seconds)
	for _, w := range workers {
		total.add(&w.cnt)
	}
	return total
}

// makeValue returns the value every SET of the run stores.
func makeValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return v
}

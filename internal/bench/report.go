package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/dssio/dss/internal/procstat"
)

// Report is the result of a run. Latencies are in microseconds.
type Report struct {
	Op        string `json:"op"`
	Server    string `json:"server"`
	Clients   int    `json:"clients"`
	Inflight  int    `json:"inflight"`
	Keys      int    `json:"keys"`
	ValueSize int    `json:"value_size"`
	// WarmupSeconds and Seconds are the warm-up and the measured window.
	WarmupSeconds float64 `json:"warmup_seconds"`
	Seconds       float64 `json:"seconds"`

	// Requests counts the valid responses received in the measured
	// window; Throughput is Requests per second of the window.
	Requests   int64    `json:"requests"`
	Throughput float64  `json:"requests_per_second"`
	Latency    *Latency `json:"latency_us,omitempty"`
	// Outcomes counts the measured responses by verb and outcome (ok,
	// missing, not_met).
	Outcomes map[string]map[string]int64 `json:"outcomes,omitempty"`

	// Sent counts every request sent, warm-up and preload included.
	Sent int64 `json:"sent"`
	// Errors counts the invalid responses and failed requests of the
	// whole run, by kind in ErrorsByKind, with one example each.
	Errors       int64             `json:"errors"`
	ErrorsByKind map[string]int64  `json:"errors_by_kind,omitempty"`
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	// Timeouts counts requests without a response within the timeout;
	// Late those of them whose response came after all.
	Timeouts int64 `json:"timeouts"`
	Late     int64 `json:"late"`

	// ClientCPUPerRequest is the generator's own CPU time (user +
	// system) per measured request, in microseconds.
	ClientCPUPerRequest float64 `json:"client_cpu_us_per_request"`
	// ClientCPUCores is the generator's CPU time per second of the window.
	ClientCPUCores float64 `json:"client_cpu_cores"`
	// The server's CPU time per measured request and per second of the
	// window, and its resident memory at the start and the end of the
	// window, when --server-pid is given.
	ServerCPUPerRequest *float64 `json:"server_cpu_us_per_request,omitempty"`
	ServerCPUCores      *float64 `json:"server_cpu_cores,omitempty"`
	ServerRSSStart      *int64   `json:"server_rss_start_bytes,omitempty"`
	ServerRSSEnd        *int64   `json:"server_rss_end_bytes,omitempty"`

	// Preload summarizes the storing of every key before the window.
	Preload *Phase `json:"preload,omitempty"`
	// Connections is the number of connections an idle run held.
	Connections int `json:"connections,omitempty"`
	// Notify is the result of a keynotify or watch run.
	Notify *NotifyReport `json:"keynotify,omitempty"`
	// PubSub is the result of a pubsub run: Requests counts the messages
	// published in the window, Latency their way to the subscribers.
	PubSub *PubSubReport `json:"pubsub,omitempty"`
	// Timeline has one entry per second of the run, warm-up included.
	Timeline []second `json:"timeline,omitempty"`
}

// Phase summarizes an unmeasured phase.
type Phase struct {
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
	Errors   int64   `json:"errors"`
	Timeouts int64   `json:"timeouts"`
}

// Latency is a latency distribution in microseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func latencyOf(h *hdr.Histogram) *Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return &Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1e3,
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		Max:   us(h.Max()),
	}
}

func newReport(cfg *Config) *Report {
	return &Report{
		Op:            cfg.Workload.String(),
		Server:        cfg.Server,
		Clients:       cfg.Clients,
		Inflight:      cfg.Inflight,
		Keys:          cfg.Keys,
		ValueSize:     cfg.ValueSize,
		WarmupSeconds: cfg.Warmup.Seconds(),
	}
}

// addCounters puts the counts of the run into the report.
func (r *Report) addCounters(c *counters) {
	r.Requests += c.requests
	r.Sent += c.sent
	r.Timeouts += c.timeouts
	r.Late += c.late
	for v := range c.outcomes {
		for o, n := range c.outcomes[v] {
			if n == 0 {
				continue
			}
			if r.Outcomes == nil {
				r.Outcomes = make(map[string]map[string]int64)
			}
			if r.Outcomes[verb(v).String()] == nil {
				r.Outcomes[verb(v).String()] = make(map[string]int64)
			}
			r.Outcomes[verb(v).String()][outcomeNames[o]] += n
		}
	}
	r.addErrors(c)
	r.Timeline = c.timeline
}

func (r *Report) addErrors(c *counters) {
	for k, n := range c.errors {
		if n == 0 {
			continue
		}
		if r.ErrorsByKind == nil {
			r.ErrorsByKind = make(map[string]int64)
			r.ErrorSamples = make(map[string]string)
		}
		name := errKind(k).String()
		r.Errors += n
		r.ErrorsByKind[name] += n
		if r.ErrorSamples[name] == "" {
			r.ErrorSamples[name] = c.samples[k]
		}
	}
}

// addUsage puts the CPU and memory used between u0 and u1 into the report.
func (r *Report) addUsage(u0, u1 procstat.Reading, requests int64) {
	window := u1.At.Sub(u0.At).Seconds()
	self := (u1.Self - u0.Self).Seconds()
	if window > 0 {
		r.ClientCPUCores = self / window
	}
	if requests > 0 {
		r.ClientCPUPerRequest = self * 1e6 / float64(requests)
	}
	if !u0.ServerOK || !u1.ServerOK {
		return
	}
	server := (u1.Server - u0.Server).Seconds()
	if window > 0 {
		cores := server / window
		r.ServerCPUCores = &cores
	}
	if requests > 0 {
		per := server * 1e6 / float64(requests)
		r.ServerCPUPerRequest = &per
	}
	r.ServerRSSStart, r.ServerRSSEnd = &u0.ServerRSS, &u1.ServerRSS
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	switch {
	case r.Notify != nil && r.Notify.Writers > 0:
		fmt.Fprintf(&b, "op %s against %s: %d writers x %d in flight, %d watchers each for a %s of its own, %d-byte values\n",
			r.Op, r.Server, r.Notify.Writers, r.Inflight, r.Notify.Watchers, r.Notify.Registration, r.ValueSize)
	case r.Notify != nil:
		fmt.Fprintf(&b, "op %s against %s: 1 writer, %d watchers of one %s, %d-byte values\n",
			r.Op, r.Server, r.Notify.Watchers, r.Notify.Registration, r.ValueSize)
	case r.Connections > 0:
		fmt.Fprintf(&b, "op %s against %s: %d idle connections\n", r.Op, r.Server, r.Clients)
	case r.PubSub != nil:
		fmt.Fprintf(&b, "op %s: %d publishers x %d in flight on %s, %d subscribers on %s, QoS %d, %d-byte payloads\n",
			r.Op, r.PubSub.Publishers, r.Inflight, r.Server, r.PubSub.Subscribers, r.PubSub.SubServer, r.PubSub.QoS, r.ValueSize)
	default:
		fmt.Fprintf(&b, "op %s against %s: %d clients x %d in flight, %d keys, %d-byte values\n",
			r.Op, r.Server, r.Clients, r.Inflight, r.Keys, r.ValueSize)
	}
	if p := r.Preload; p != nil {
		fmt.Fprintf(&b, "preload     %d keys in %.2fs, %d errors, %d timeouts\n", p.Requests, p.Seconds, p.Errors, p.Timeouts)
	}
	switch {
	case r.Notify != nil:
		r.Notify.writeText(&b, r)
	case r.Connections > 0:
		fmt.Fprintf(&b, "connections %d held for %.2fs\n", r.Connections, r.Seconds)
	default:
		fmt.Fprintf(&b, "window      %.2fs after %.2fs of warm-up\n", r.Seconds, r.WarmupSeconds)
		fmt.Fprintf(&b, "requests    %d (%.0f/s)\n", r.Requests, r.Throughput)
		if p := r.PubSub; p != nil {
			fmt.Fprintf(&b, "delivered   %d (%d never came)\n", p.Deliveries, p.Lost)
			if l := p.Puback; l != nil {
				fmt.Fprintf(&b, "puback      p50 %s  p99 %s\n", us(l.P50), us(l.P99))
			}
		}
		if l := r.Latency; l != nil {
			fmt.Fprintf(&b, "latency     p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  mean %s\n",
				us(l.P50), us(l.P90), us(l.P99), us(l.P999), us(l.Max), us(l.Mean))
		}
		for _, v := range sortedKeys(r.Outcomes) {
			fmt.Fprintf(&b, "%-11s", strings.ToLower(v))
			for _, o := range outcomeNames {
				if n, ok := r.Outcomes[v][o]; ok {
					fmt.Fprintf(&b, " %s %d", o, n)
				}
			}
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "errors      %d   timeouts %d   late %d\n", r.Errors, r.Timeouts, r.Late)
	for _, k := range sortedKeys(r.ErrorsByKind) {
		fmt.Fprintf(&b, "  %s: %d, e.g. %s\n", k, r.ErrorsByKind[k], r.ErrorSamples[k])
	}
	unit := "request"
	switch {
	case r.Notify != nil:
		unit = "notification"
	case r.PubSub != nil:
		unit = "message"
	}
	if r.Connections == 0 {
		fmt.Fprintf(&b, "client CPU  %.2f µs/%s (%.2f cores)\n", r.ClientCPUPerRequest, unit, r.ClientCPUCores)
	}
	if r.ServerCPUPerRequest != nil && r.Connections == 0 {
		fmt.Fprintf(&b, "server CPU  %.2f µs/%s (%.2f cores)\n", *r.ServerCPUPerRequest, unit, *r.ServerCPUCores)
	}
	if p := r.PubSub; p != nil && p.ReceiverCPUPerMessage != nil {
		fmt.Fprintf(&b, "subscribers' server CPU  %.2f µs/message\n", *p.ReceiverCPUPerMessage)
	}
	if r.ServerRSSStart != nil {
		fmt.Fprintf(&b, "server RSS  %.1f MiB at the start, %.1f MiB at the end\n",
			float64(*r.ServerRSSStart)/(1<<20), float64(*r.ServerRSSEnd)/(1<<20))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// us formats a duration in microseconds with three significant digits or
// so.
func us(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.1fµs", v)
	case v < 1e6:
		return fmt.Sprintf("%.2fms", v/1e3)
	}
	return fmt.Sprintf("%.2fs", v/1e6)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

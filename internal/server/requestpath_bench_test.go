package server_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dssio/dss/internal/bench"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// BenchmarkRequestPath sends b.N requests through the whole server: TCP,
// the MQTT broker, the binding, the engine and back, from the lean client
// of dss bench over loopback. The server runs in this process, so the
// allocations that -benchmem reports are the server's (the client
// allocates nothing per request in steady state). The custom metrics give
// the client's p50 and p99 latency and the process's CPU time per request
// (server and client together).
func BenchmarkRequestPath(b *testing.B) {
	s := dsstest.StartServer(b, server.Config{})
	for _, bm := range []struct {
		name    string
		op      string
		clients int
	}{
		{"SET/1client", "set", 1},
		{"GET/1client", "get", 1},
		{"SET/64clients", "set", 64},
		{"GET/64clients", "get", 64},
	} {
		b.Run(bm.name, func(b *testing.B) {
			rep := runRequestBench(b, bm.op, bench.Config{Server: s.Addr(), Clients: bm.clients})
			if rep.Latency != nil {
				b.ReportMetric(rep.Latency.P50, "p50-µs")
				b.ReportMetric(rep.Latency.P99, "p99-µs")
			}
		})
	}
}

// runRequestBench sends b.N requests of the workload op ("set" or "get")
// with cfg's server, clients and credentials, times them, fails unless
// every one is answered, and reports the CPU time of this process per
// request. A GET benchmark first stores the keys it reads. It returns the
// report for further metrics.
func runRequestBench(b *testing.B, op string, cfg bench.Config) *bench.Report {
	b.Helper()
	w, err := bench.ParseWorkload(op)
	if err != nil {
		b.Fatal(err)
	}
	no := false
	cfg.Workload = w
	// The SET benchmark ran first and stored the keys.
	cfg.Preload = &no
	cfg.Requests = int64(b.N)
	cfg.Timeout = 10 * time.Second
	cfg.ClientID = "bench-" + op
	if op == "get" {
		fill, _ := bench.ParseWorkload("fill")
		pre := cfg
		pre.Workload, pre.Requests = fill, 0
		if _, err := bench.Run(context.Background(), pre, nil); err != nil {
			b.Fatal(err)
		}
	}
	cfg.ServerPID = os.Getpid()
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := bench.Run(context.Background(), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if rep.Errors != 0 || rep.Timeouts != 0 || rep.Requests != int64(b.N) {
		b.Fatalf("%d of %d requests answered, errors %v %v, timeouts %d", rep.Requests, b.N, rep.ErrorsByKind, rep.ErrorSamples, rep.Timeouts)
	}
	if rep.ServerCPUPerRequest != nil {
		b.ReportMetric(*rep.ServerCPUPerRequest, "cpu-µs/op")
	}
	return rep
}

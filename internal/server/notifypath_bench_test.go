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

// BenchmarkNotifyPath sends b.N SETs through the whole server, each to
// the key of one of 1,000 watching connections, registered for that key
// (KEYNOTIFY b/<i>/k) or for a pattern that matches it alone (KEYNOTIFY
// b/<i>/* PATTERN), and waits for every notification: dss bench's watch
// and watch:pattern in one process. An op is one SET and its
// notification; the custom metrics give the latency from the SET's write
// to the notification's receipt and the process's CPU time per
// notification (server and client together, from the first SET to the
// last notification, without the connecting and registering that ns/op
// includes). Compare key and pattern; BenchmarkNotifyChanged in
// internal/broker isolates the registry's share.
func BenchmarkNotifyPath(b *testing.B) {
	s := dsstest.StartServer(b, server.Config{})
	for _, op := range []string{"watch", "watch:pattern"} {
		name := map[string]string{"watch": "key", "watch:pattern": "pattern"}[op]
		b.Run(name+"/1000watchers", func(b *testing.B) {
			w, err := bench.ParseWorkload(op)
			if err != nil {
				b.Fatal(err)
			}
			cfg := bench.Config{
				Server:    s.Addr(),
				Workload:  w,
				Watchers:  1000,
				Clients:   4,
				Requests:  int64(b.N),
				Timeout:   30 * time.Second,
				ClientID:  "bench-" + name,
				KeyPrefix: "b/",
				ServerPID: os.Getpid(),
			}
			b.ReportAllocs()
			rep, err := bench.Run(context.Background(), cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			n := rep.Notify
			if rep.Errors != 0 || rep.Timeouts != 0 || n.Deliveries != int64(b.N) {
				b.Fatalf("%d of %d SETs notified, errors %v %v, timeouts %d", n.Deliveries, b.N, rep.ErrorsByKind, rep.ErrorSamples, rep.Timeouts)
			}
			b.ReportMetric(n.Each.P50, "p50-µs")
			b.ReportMetric(n.Each.P99, "p99-µs")
			if rep.ServerCPUPerRequest != nil {
				b.ReportMetric(*rep.ServerCPUPerRequest, "cpu-µs/notification")
			}
		})
	}
}

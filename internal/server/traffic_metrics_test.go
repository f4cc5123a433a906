package server_test

import (
	"fmt"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// /metrics has the request latencies by verb, the journal's write and
// fsync times, the snapshot durations, and the broker's publish,
// subscribe and delivery counters.
func TestTrafficAndDiskMetrics(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", DataDir: t.TempDir(), SnapshotAfter: 4 << 10})
	c := dsstest.Dial(t, s.Addr(), "metrics") // subscribes to its response and notification topics
	for i := 0; i < 200; i++ {
		expect(t, "SET", c.Set([]string{fmt.Sprint("k", i%20), fmt.Sprint("value-", i)}), "+OK\r\n", "any")
	}
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k1")), "$9\r\nvalue-181\r\n", "any")
	addr := s.HTTPAddr()
	at := func(series string) float64 { return dsstest.Metric(t, addr, series) }
	for _, series := range []string{
		`dss_request_duration_seconds_count{verb="SET"}`,
		`dss_request_duration_seconds_count{verb="GET"}`,
		`dss_journal_write_seconds_count`,
		`dss_journal_fsync_seconds_count`,
		`dss_mqtt_messages_received_total`,
		`dss_mqtt_messages_sent_total`,
		`dss_mqtt_received_bytes_total`,
		`dss_mqtt_sent_bytes_total`,
		`dss_mqtt_subscribe_filters_total{outcome="granted"}`,
		`dss_mqtt_subscriptions`,
	} {
		if v := at(series); v <= 0 {
			t.Errorf("%s = %v, want > 0", series, v)
		}
	}
	if n := at(`dss_request_duration_seconds_count{verb="SET"}`); n != 200 {
		t.Errorf("SET latencies counted: %v, want 200", n)
	}
	if got := at(`dss_mqtt_messages_received_total`); got < 201 {
		t.Errorf("messages received %v, want at least the 201 requests", got)
	}
	dsstest.Eventually(t, "a snapshot to be timed", func() bool { return at(`dss_snapshot_duration_seconds_count`) >= 1 })
}

package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// metricValue returns the value of the sample series on s's /metrics, or 0
// when it is not there.
func metricValue(t *testing.T, s *server.Server, series string) float64 {
	t.Helper()
	return dsstest.Metric(t, s.HTTPAddr(), series)
}

// Each metric that counts requests moves when requests are made: the
// metrics in docs/operations.md are the ones checked here.
func TestMetricsMoveWithRequests(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	c := dsstest.Dial(t, s.Addr(), "metrics")
	if !strings.Contains(dsstest.Metrics(t, s.HTTPAddr()), "dss_build_info{") {
		t.Error("no dss_build_info")
	}

	type step struct {
		what   string
		do     func()
		series []string
	}
	watcher := dsstest.Dial(t, s.Addr(), "watcher")
	watcher.Subscribe(wire.NotifyTopicFilter("watcher"))
	for _, st := range []step{
		{"SET", func() { c.Set([]string{"k", "v"}) }, []string{`dss_requests_total{verb="SET"}`, `dss_keys`}},
		{"a connection", func() { dsstest.Dial(t, s.Addr(), "third") }, []string{`dss_clients_connected`}},
		{"GET", func() { c.Request(dsstest.Cmd("GET", "k")) }, []string{`dss_requests_total{verb="GET"}`}},
		{"KEYNOTIFY", func() { watcher.Request(dsstest.Cmd("KEYNOTIFY", "k")) }, []string{`dss_requests_total{verb="KEYNOTIFY"}`, `dss_keynotify_registrations`}},
		{"a change of a watched key", func() { c.Set([]string{"k", "w"}); watcher.Next() }, []string{`dss_notifications_total`}},
		{"VDEL", func() { c.Request(dsstest.Cmd("VDEL", "k", "x")) }, []string{`dss_requests_total{verb="VDEL"}`}},
		{"DEL", func() { c.Request(dsstest.Cmd("DEL", "k")); watcher.Next() }, []string{`dss_requests_total{verb="DEL"}`, `dss_notifications_total`}},
		{"a request in error", func() { c.Request(dsstest.Cmd("GET")) }, []string{`dss_request_errors_total{error="` + wire.ErrWrongArgs.Text() + `"}`}},
		{"SCAN", func() { c.Request(dsstest.Cmd("SCAN", "*")) }, []string{`dss_requests_total{verb="SCAN"}`}},
		{"a response topic under the store's prefix", func() {
			bad := dsstest.DialNoSubscribe(t, s.Addr(), "bad")
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _ = bad.Paho.Publish(ctx, request(1, wire.RequestTopic, []byte("c"), dsstest.Cmd("GET", "k")))
			bad.AwaitDisconnect(0x83, "a forbidden response topic")
		}, []string{`dss_forbidden_response_topic_disconnects_total`}},
		{"a refused request", func() {
			_, _ = c.Publish(request(1, "", []byte("c"), dsstest.Cmd("GET", "k")))
		}, []string{`dss_requests_refused_total{reason="no response topic"}`}},
	} {
		before := make([]float64, len(st.series))
		for i, m := range st.series {
			before[i] = metricValue(t, s, m)
		}
		st.do()
		for i, m := range st.series {
			if after := metricValue(t, s, m); after != before[i]+1 {
				t.Errorf("%s: %s went from %v to %v, want one more", st.what, m, before[i], after)
			}
		}
	}
	if v := metricValue(t, s, `dss_ready`); v != 1 {
		t.Errorf("dss_ready %v while serving", v)
	}
	if v := metricValue(t, s, `dss_store_bytes`); v != 0 {
		t.Errorf("dss_store_bytes %v after the only key was deleted", v)
	}
	c.Set([]string{"key", "value"})
	if v := metricValue(t, s, `dss_store_bytes`); v != 8 {
		t.Errorf("dss_store_bytes %v with the key \"key\" and value \"value\", want 8", v)
	}
	before := metricValue(t, s, `dss_keynotify_registrations`)
	watcher.Request(dsstest.Cmd("KEYNOTIFY", "k", "STOP"))
	if after := metricValue(t, s, `dss_keynotify_registrations`); after != before-1 {
		t.Errorf("KEYNOTIFY STOP: registrations went from %v to %v", before, after)
	}
}

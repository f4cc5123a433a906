package attach_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

func metric(t *testing.T, http, series string) float64 {
	t.Helper()
	return dsstest.Metric(t, http, series)
}

// With --presence mosquitto, a client's registrations end when Mosquitto
// says it disconnected or connected anew, and nothing is published for
// it after.
func TestPresenceMosquitto(t *testing.T) {
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
	acfg := m.AttachConfig("dss-test")
	acfg.Presence = attach.PresenceMosquitto
	_, web := startWithHTTP(t, m, server.Config{Attach: acfg})
	registrations := func() float64 { return metric(t, web, "dss_keynotify_registrations") }

	for _, leave := range []struct {
		name string
		do   func(c *dsstest.Client)
	}{
		{"disconnects", func(c *dsstest.Client) { _ = c.Paho.Disconnect(&paho.Disconnect{}) }},
		{"connects anew", func(c *dsstest.Client) { dsstest.DialNoSubscribe(t, m.Addr, c.ID) }},
	} {
		w := dsstest.Dial(t, m.Addr, "watcher-"+strings.ReplaceAll(leave.name, " ", "-"))
		for _, args := range [][]string{{"KEYNOTIFY", "k"}, {"KEYNOTIFY", "k*", "PATTERN"}} {
			if p := w.Request(dsstest.Cmd(args...)); string(p.Payload) != "+OK\r\n" {
				t.Fatalf("%s: %q", args, p.Payload)
			}
		}
		if n := registrations(); n != 2 {
			t.Fatalf("%v registrations, want 2 (a key and a pattern)", n)
		}
		leave.do(w)
		dsstest.Eventually(t, "the registrations dropped when the client "+leave.name, func() bool { return registrations() == 0 })
	}
	before := metric(t, web, "dss_notifications_total")
	c := dsstest.Dial(t, m.Addr, "writer")
	c.Set([]string{"k", "v"})
	if after := metric(t, web, "dss_notifications_total"); after != before {
		t.Fatalf("%v notifications published for clients that left", after-before)
	}
	if n := metric(t, web, "dss_attach_client_departures_total"); n < 2 {
		t.Fatalf("%v departures counted, want 2", n)
	}
}

// Without presence news, a registration lasts its lease unless the client
// registers again.
func TestKeyNotifyLease(t *testing.T) {
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
	acfg := m.AttachConfig("dss-test")
	acfg.Lease = 400 * time.Millisecond
	_, web := startWithHTTP(t, m, server.Config{Attach: acfg})

	renewed := dsstest.Dial(t, m.Addr, "renewed")
	renewed.Subscribe(wire.NotifyTopicFilter("renewed"))
	lapsed := dsstest.Dial(t, m.Addr, "lapsed")
	lapsed.Subscribe(wire.NotifyTopicFilter("lapsed"))
	// A key and a pattern each: the pattern's lease is renewed by
	// KEYNOTIFY of the pattern, as the key's by KEYNOTIFY of the key.
	key, pattern := dsstest.Cmd("KEYNOTIFY", "k"), dsstest.Cmd("KEYNOTIFY", "p*", "PATTERN")
	for _, c := range []*dsstest.Client{renewed, lapsed} {
		c.Request(key)
		c.Request(pattern)
	}
	for range 8 { // twice the lease
		time.Sleep(100 * time.Millisecond)
		renewed.Request(key)
		renewed.Request(pattern)
	}
	dsstest.Eventually(t, "the lapsed registrations dropped", func() bool {
		return metric(t, web, "dss_keynotify_registrations") == 2
	})
	if n := metric(t, web, "dss_attach_keynotify_leases_expired_total"); n != 2 {
		t.Fatalf("%v leases expired, want 2", n)
	}
	w := dsstest.Dial(t, m.Addr, "writer")
	w.Set([]string{"k", "v"})
	w.Set([]string{"p1", "v"})
	for _, hexKey := range []string{"6B", "7031"} {
		if n := renewed.Next(); !strings.HasSuffix(n.Topic, "/command/notify/"+hexKey) {
			t.Fatalf("renewed: %q on %s, want the key %s", n.Payload, n.Topic, hexKey)
		}
	}
	lapsed.NoMessage(300 * time.Millisecond)

	// dss's client renews the registrations of its watches.
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	dc, err := client.Dial(ctx, client.Config{Servers: []string{m.Addr}, ClientID: "dss-client", WatchRenewal: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	watch, err := dc.Watch(ctx, []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Stop(context.Background()) }()
	patternWatch, err := dc.WatchPattern(ctx, "p*")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = patternWatch.Stop(context.Background()) }()
	time.Sleep(1200 * time.Millisecond) // three leases
	w.Set([]string{"k", "later"})
	w.Set([]string{"p2", "later"})
	for _, ww := range []*client.Watch{watch, patternWatch} {
		select {
		case e := <-ww.Events():
			if string(e.Value) != "later" {
				t.Fatalf("watch event %+v", e)
			}
		case <-ctx.Done():
			t.Fatalf("the dss client's watch %q lapsed with its lease", ww.Pattern())
		}
	}
}

// The broker restarting (killed, its sessions lost): dss says so in
// /readyz and its metrics, keeps its state, reconnects and subscribes
// again, and serves.
func TestBrokerRestart(t *testing.T) {
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
	s, web := startWithHTTP(t, m, server.Config{DataDir: t.TempDir()})
	c := dsstest.Dial(t, m.Addr, "before")
	set := c.Set([]string{"k", "kept"})

	m.Kill()
	dsstest.Eventually(t, "not ready while the broker is down", func() bool {
		code, _ := dsstest.HTTPGet(t, web, "/readyz")
		return code == http.StatusServiceUnavailable && s.Ready() != nil
	})
	_, body := dsstest.HTTPGet(t, web, "/readyz")
	if !strings.Contains(body, "broker") {
		t.Fatalf("/readyz says %q, not that the broker is out of reach", body)
	}
	if metric(t, web, "dss_attach_connected") != 0 || metric(t, web, "dss_attach_connection_losses_total") != 1 {
		t.Fatal("the metrics do not show the lost connection")
	}
	if code, _ := dsstest.HTTPGet(t, web, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d while the store is sound and the broker away", code)
	}

	m.Restart()
	dsstest.WaitReady(t, s)
	if metric(t, web, "dss_attach_sessions_lost_total") != 1 || metric(t, web, "dss_attach_subscribed") != 1 {
		t.Fatal("the metrics do not show the session lost with the broker, or the subscription made again")
	}
	c = dsstest.Dial(t, m.Addr, "after")
	get := c.Request(dsstest.Cmd("GET", "k"))
	ts, _ := dsstest.UserProperty(get, wire.PropTimestamp)
	want, _ := dsstest.UserProperty(set, wire.PropTimestamp)
	if string(get.Payload) != "$4\r\nkept\r\n" || ts != want {
		t.Fatalf("after the broker's restart: %q %s, want kept %s", get.Payload, ts, want)
	}
}

// A broker that refuses dss's connection (a wrong password): dss keeps
// trying, says why, and is not ready; it stops cleanly.
func TestBrokerRefusesConnection(t *testing.T) {
	dsstest.NeedMosquitto(t)
	pw := filepath.Join(t.TempDir(), "passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", "-c", pw, "dss", "right").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v %s", err, out)
	}
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{Authenticated: true, Lines: []string{"password_file " + pw}})
	acfg := m.AttachConfig("dss-test")
	acfg.Username, acfg.Password = "dss", []byte("wrong")
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", NodeID: "test", Attach: acfg})
	dsstest.Eventually(t, "failed attempts counted", func() bool {
		return metric(t, s.HTTPAddr(), "dss_attach_connect_failures_total") >= 2
	})
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "refused") && !strings.Contains(err.Error(), "0x86") && !strings.Contains(err.Error(), "0x87") {
		t.Fatalf("ready: %v, want the refusal", err)
	}
}

// Two instances attached to one broker, a cluster of two nodes, share
// the requests; each sees every write, and a watcher registered on one
// hears of a change written through the other.
func TestTwoInstancesShareTheLoad(t *testing.T) {
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
	addrs := []string{dsstest.NodeAddr(t), dsstest.NodeAddr(t)}
	peers := []cluster.Peer{{ID: "n1", Addr: addrs[0]}, {ID: "n2", Addr: addrs[1]}}
	var webs []string
	var servers []*server.Server
	for i, p := range peers {
		s := dsstest.StartServer(t, server.Config{
			NodeID: p.ID, DataDir: t.TempDir(), HTTPListen: "127.0.0.1:0",
			// Raft timeouts that a machine loaded by the whole suite
			// does not run out of: no election midway.
			Cluster: server.ClusterConfig{Listen: addrs[i], Peers: peers, HeartbeatTimeout: 2 * time.Second},
			Attach:  m.AttachConfig("dss-" + p.ID),
		})
		servers = append(servers, s)
		webs = append(webs, s.HTTPAddr())
	}
	for _, s := range servers {
		dsstest.WaitReady(t, s)
	}
	w := dsstest.Dial(t, m.Addr, "watcher")
	w.Subscribe(wire.NotifyTopicFilter("watcher"))
	w.Request(dsstest.Cmd("KEYNOTIFY", "watched"))

	c := dsstest.Dial(t, m.Addr, "writer")
	const n = 200
	var pending []chan *paho.Publish
	for i := range n {
		pending = append(pending, c.Send(dsstest.Cmd("SET", fmt.Sprint("k", i), fmt.Sprint(i)), paho.UserProperty{Key: wire.PropTimestamp, Value: dsstest.Now()}))
	}
	for i, ch := range pending {
		if p := c.Await(ch); string(p.Payload) != "+OK\r\n" {
			t.Fatalf("SET k%d: %q", i, p.Payload)
		}
	}
	for i, web := range webs {
		got := metric(t, web, `dss_requests_total{verb="SET"}`)
		if got < n/10 {
			t.Errorf("instance %d carried out %v of %d writes: the broker does not share the requests", i+1, got, n)
		}
		// Every write answered was timed, under its verb.
		if timed := metric(t, web, `dss_request_duration_seconds_count{verb="SET"}`); timed != got {
			t.Errorf("instance %d timed %v of its %v writes", i+1, timed, got)
		}
	}
	// Pipelined: a linearizable read in a cluster waits for a heartbeat
	// round, which reads sent together share.
	var gets []chan *paho.Publish
	for i := range n {
		gets = append(gets, c.Send(dsstest.Cmd("GET", fmt.Sprint("k", i))))
	}
	for i, ch := range gets {
		if p := c.Await(ch); string(p.Payload) != fmt.Sprintf("$%d\r\n%d\r\n", len(fmt.Sprint(i)), i) {
			t.Fatalf("GET k%d: %q", i, p.Payload)
		}
	}
	// Whichever instance took the registration and whichever the write,
	// the watcher hears of it: every node applies every change.
	for i := range 4 {
		c.Set([]string{"watched", fmt.Sprint(i)})
		if p := w.Next(); !strings.HasSuffix(string(p.Payload), fmt.Sprintf("$1\r\n%d\r\n", i)) {
			t.Fatalf("notification %d: %q", i, p.Payload)
		}
	}
}

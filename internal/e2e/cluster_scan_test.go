package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// fill stores value under every key through a pipe to m, a batch of
// requests in one write at a time; a request answered "unavailable" or
// "busy" (an election) is sent again with request.
func fill(t *testing.T, m *member, id string, keys []string, value string) {
	t.Helper()
	p := dsstest.DialPipe(t, m.mqtt, id)
	const batch = 200
	for start := 0; start < len(keys); start += batch {
		chunk := keys[start:min(start+batch, len(keys))]
		reqs := make([]dsstest.PipeRequest, len(chunk))
		for i, k := range chunk {
			reqs[i] = dsstest.PipeRequest{
				Payload:     dsstest.Cmd("SET", k, value),
				Correlation: []byte(id + "/" + k),
				User:        []packets.User{{Key: wire.PropTimestamp, Value: dsstest.Now()}},
			}
		}
		p.Write(reqs...)
		res := p.Responses(len(reqs))
		var again []string
		for i, r := range reqs {
			if s := string(res[string(r.Correlation)].Payload); s != "+OK\r\n" {
				if s != "-ERR "+wire.ErrUnavailable.Text()+"\r\n" && s != "-ERR "+wire.ErrBusy.Text()+"\r\n" {
					t.Fatalf("SET %s through %s: %q", chunk[i], m.id, s)
				}
				again = append(again, chunk[i])
			}
		}
		if len(again) > 0 {
			c := dsstest.Dial(t, m.mqtt, fmt.Sprintf("%s-again-%d", id, start))
			for _, k := range again {
				if s := string(request(t, c, dsstest.Cmd("SET", k, value), ts()).Payload); s != "+OK\r\n" {
					t.Fatalf("SET %s through %s: %q", k, m.id, s)
				}
			}
		}
	}
}

// scanPage sends SCAN pattern [token] through c until it is not answered
// "unavailable" or "busy" and returns the page.
func scanPage(t *testing.T, c *dsstest.Client, pattern string, token []byte) (keys [][]byte, next []byte, more bool) {
	t.Helper()
	args := [][]byte{[]byte("SCAN"), []byte(pattern)}
	if token != nil {
		args = append(args, token)
	}
	p := request(t, c, resp.AppendArray(nil, args...))
	keys, next, more, err := resp.ParseScanPage(p.Payload)
	if err != nil {
		t.Fatalf("SCAN through %s: %q: %v", c.ID, p.Payload, err)
	}
	return keys, slices.Clone(next), more
}

// TestClusterScanThroughAKilledLeader pages through a SCAN of a 3-node
// cluster of race-detecting builds, a page through a follower, the next
// through the leader, which is then SIGKILLed; the scan goes on with the
// leader's token through the nodes that remain, while keys are written
// and deleted through a follower all along. Every key present throughout
// is listed at least once, and no key the pattern does not match or that
// never existed.
func TestClusterScanThroughAKilledLeader(t *testing.T) {
	tc := startRaceCluster(t, 3)
	leader := tc.leader()
	followers := tc.others(leader)
	// Keys the pattern matches and keys it does not: a page looks at
	// 1,024 keys whether they match or not, so 4,000 make four pages and
	// more.
	var stable, others []string
	for i := range 3000 {
		stable = append(stable, fmt.Sprintf("key/%05d", i))
	}
	for i := range 1000 {
		others = append(others, fmt.Sprintf("other/%05d", i))
	}
	fill(t, followers[0], "fill-f", stable[:1500], "v")
	fill(t, leader, "fill-l", stable[1500:], "v")
	fill(t, followers[1], "fill-o", others, "v")

	// Keys that come and go during the scan, through the follower that
	// is not scanned first.
	churner := dsstest.Dial(t, followers[1].mqtt, "churn")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var churned atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		unavailable, busy := "-ERR "+wire.ErrUnavailable.Text()+"\r\n", "-ERR "+wire.ErrBusy.Text()+"\r\n"
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("key/churn-%05d", i)
			for _, cmd := range [][]byte{dsstest.Cmd("SET", k, "c"), dsstest.Cmd("DEL", k)} {
				// An election may leave a request unanswered for a
				// while; the scan goes on regardless.
				p := try(churner, writeLimit, cmd, ts())
				if p == nil || (string(p.Payload) != "+OK\r\n" && !strings.HasPrefix(string(p.Payload), ":") &&
					string(p.Payload) != unavailable && string(p.Payload) != busy) {
					t.Errorf("churn %q: %v", cmd, p)
					return
				}
			}
			churned.Add(1)
		}
	}()
	dsstest.EventuallyWithin(t, writeLimit, "keys written and deleted", func() bool { return churned.Load() >= 3 })
	t.Logf("%d keys stored", len(stable)+len(others))

	clients := map[*member]*dsstest.Client{}
	for _, m := range tc.members {
		clients[m] = dsstest.Dial(t, m.mqtt, "scan-"+m.id)
	}
	var listed []string
	var token []byte
	killed := false
	route := []*member{followers[0], leader}
	for page := 0; ; page++ {
		m := route[page%len(route)]
		keys, next, more := scanPage(t, clients[m], "key/*", token)
		for _, k := range keys {
			listed = append(listed, string(k))
		}
		t.Logf("page %d through %s: %d keys, more %v", page, m.id, len(keys), more)
		if !more {
			break
		}
		token = next
		if m == leader && !killed {
			// The leader made this token; it goes on through the
			// others once they elect a new leader.
			leader.proc.kill()
			killed = true
			route = []*member{followers[1], followers[0]}
		}
	}
	close(stop)
	wg.Wait()
	if !killed {
		t.Fatal("the scan ended before the leader was killed")
	}
	t.Logf("%d keys listed, %d keys written and deleted around the scan", len(listed), churned.Load())

	seen := map[string]int{}
	for _, k := range listed {
		seen[k]++
		if !strings.HasPrefix(k, "key/") {
			t.Fatalf("listed %q, which key/* does not match", k)
		}
		if _, ok := slices.BinarySearch(stable, k); !ok && !strings.HasPrefix(k, "key/churn-") {
			t.Fatalf("listed %q, which was never written", k)
		}
	}
	var missing []string
	for _, k := range stable {
		if seen[k] == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d keys present throughout were not listed, e.g. %q", len(missing), missing[:min(len(missing), 5)])
	}
}

// TestClusterPatternNotificationsOnAFollower registers a pattern, a
// second pattern and a key on a follower of a cluster of race-detecting
// builds, and writes through every node: the follower notifies each
// change of a matching key once, in apply order, on the key's own topic,
// expiry included; a key no registration matches (one not UTF-8 among
// them) is not notified. After the leader is SIGKILLed the registrations
// still hold.
func TestClusterPatternNotificationsOnAFollower(t *testing.T) {
	tc := startRaceCluster(t, 3)
	leader := tc.leader()
	follower := tc.others(leader)[0]
	w := dsstest.Dial(t, follower.mqtt, "pattern-watcher")
	w.Subscribe(wire.NotifyTopicFilter(w.ID))
	for _, reg := range [][]string{{"KEYNOTIFY", "sensor/*", "PATTERN"}, {"KEYNOTIFY", "*/temp", "PATTERN"}, {"KEYNOTIFY", "sensor/temp"}} {
		if r := request(t, w, dsstest.Cmd(reg...)); string(r.Payload) != "+OK\r\n" {
			t.Fatalf("%q: %q", reg, r.Payload)
		}
	}
	writers := map[*member]*dsstest.Client{}
	for _, m := range tc.members {
		writers[m] = dsstest.Dial(t, m.mqtt, "writer-"+m.id)
	}
	type change struct{ key, value string } // value "" for a deletion
	var want []change
	write := func(m *member, cmd []string, notified bool) {
		t.Helper()
		r := request(t, writers[m], dsstest.Cmd(cmd...), ts())
		if s := string(r.Payload); s != "+OK\r\n" && s != ":1\r\n" {
			t.Fatalf("%q through %s: %q", cmd, m.id, s)
		}
		if !notified {
			return
		}
		switch cmd[0] {
		case "SET":
			want = append(want, change{cmd[1], cmd[2]})
		case "DEL":
			want = append(want, change{cmd[1], ""})
		}
	}
	var last hlc.Timestamp
	check := func() {
		t.Helper()
		for _, c := range want {
			p := w.Next()
			if topic := wire.NotifyTopic(w.ID, []byte(c.key)); p.Topic != topic {
				t.Fatalf("notification on %q, want %q (for %q)", p.Topic, topic, c.key)
			}
			payload := resp.AppendArray(nil, []byte("NOTIFY"), []byte("DELETE"))
			if c.value != "" {
				payload = resp.AppendArray(nil, []byte("NOTIFY"), []byte("SET"), []byte("VALUE"), []byte(c.value))
			}
			if string(p.Payload) != string(payload) {
				t.Fatalf("notification for %q: %q, want %q", c.key, p.Payload, payload)
			}
			if v := version(t, p); !last.Before(v) {
				t.Fatalf("notification for %q: version %v after %v", c.key, v, last)
			}
			last = version(t, p)
		}
		want = want[:0]
	}

	nodes := tc.members
	write(nodes[0], []string{"SET", "other/hum", "x"}, false)
	write(nodes[1], []string{"SET", "sensor/temp", "21"}, true) // two patterns and the key: once
	write(nodes[2], []string{"SET", "room/temp", "19"}, true)
	write(nodes[0], []string{"SET", "sensor/\xff", "not UTF-8"}, false)
	write(nodes[1], []string{"SET", "sensor/\x00bin", "b"}, true)
	write(nodes[2], []string{"DEL", "sensor/temp"}, true)
	write(leader, []string{"SET", "sensor/ttl", "t", "PX", "300"}, true)
	check()
	// The expiry, which the leader decides and the log carries.
	p := w.Next()
	if p.Topic != wire.NotifyTopic(w.ID, []byte("sensor/ttl")) || string(p.Payload) != string(resp.AppendArray(nil, []byte("NOTIFY"), []byte("DELETE"))) {
		t.Fatalf("expiry notification on %q: %q", p.Topic, p.Payload)
	}
	last = version(t, p)

	leader.proc.kill()
	for _, m := range tc.others(leader) {
		write(m, []string{"SET", "sensor/after-" + m.id, "a"}, true)
		write(m, []string{"SET", "other/after-" + m.id, "a"}, false)
	}
	check()
	// Nothing else came: notifications keep the apply order, so one for
	// other/last would come before the one for sensor/last.
	write(tc.others(leader)[0], []string{"SET", "other/last", "x"}, false)
	write(tc.others(leader)[0], []string{"SET", "sensor/last", "x"}, true)
	check()
}

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// dssRaceBinary builds dss with the race detector, once, for the tests
// that run it as a process under faults.
var dssRace struct {
	once sync.Once
	path string
	err  error
}

func dssRaceBinary(t *testing.T) string {
	t.Helper()
	dssRace.once.Do(func() {
		dir, err := os.MkdirTemp("", "dss-race")
		if err != nil {
			dssRace.err = err
			return
		}
		dssRace.path = filepath.Join(dir, "dss")
		out, err := exec.Command("go", "build", "-race", "-o", dssRace.path, "github.com/dssio/dss/cmd/dss").CombinedOutput()
		if err != nil {
			dssRace.err = fmt.Errorf("go build -race: %v\n%s", err, out)
		}
	})
	if dssRace.err != nil {
		t.Fatal(dssRace.err)
	}
	return dssRace.path
}

// startAttached runs bin attach to the broker with args, and waits until
// /readyz says it serves.
func startAttached(t *testing.T, bin, broker, web string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"attach", "--broker", broker, "--http-listen", web}, args...)...)
	p := runProcess(t, "", cmd)
	waitHTTPReady(t, p, web)
	return p
}

func waitHTTPReady(t *testing.T, p *process, web string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get("http://" + web + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("dss attach exited: %v\n%s", p.err, p.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dss attach not ready within a minute:\n%s", p.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writer sends SET NX of keys of its own through the broker, one at a
// time, each until it is answered (NX: a write carried out twice answers
// the second time that the key exists): a request that gets no answer (the
// broker went away) is sent again, with the same correlation data and
// content, on a new connection, as a client that retries does. It
// records every answer it receives.
type writer struct {
	t      *testing.T
	addr   string
	id     string
	topic  string
	conn   *paho.Client
	mu     sync.Mutex
	answer map[string][]*paho.Publish // by correlation data
	sent   map[string]int
	got    chan *paho.Publish
	acked  map[string]string // key → version of the write's answer
}

func newWriter(t *testing.T, addr, id string) *writer {
	return &writer{t: t, addr: addr, id: id, topic: "clients/" + id + "/services/statestore/_any_/command/invoke/response",
		answer: map[string][]*paho.Publish{}, sent: map[string]int{}, got: make(chan *paho.Publish, 64), acked: map[string]string{}}
}

func (w *writer) connect(ctx context.Context) bool {
	for ctx.Err() == nil {
		conn, err := net.DialTimeout("tcp", w.addr, time.Second)
		if err == nil {
			c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){w.received}})
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = c.Connect(cctx, &paho.Connect{ClientID: w.id, KeepAlive: 30, CleanStart: true})
			if err == nil {
				_, err = c.Subscribe(cctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: w.topic, QoS: 1}}})
			}
			cancel()
			if err == nil {
				w.conn = c
				return true
			}
			_ = conn.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (w *writer) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	w.mu.Lock()
	w.answer[string(p.Properties.CorrelationData)] = append(w.answer[string(p.Properties.CorrelationData)], p)
	w.mu.Unlock()
	select {
	case w.got <- p:
	default:
	}
	return true, nil
}

func (w *writer) drop() {
	if w.conn != nil {
		_ = w.conn.Disconnect(&paho.Disconnect{})
		w.conn = nil
	}
}

// run writes until ctx ends (and finishes the write under way, within
// a minute).
func (w *writer) run(ctx context.Context) {
	defer w.drop()
	finish, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("%s/%d", w.id, n)
		ts := dsstest.Now()
		for {
			if w.conn == nil && !w.connect(finish) {
				w.t.Errorf("%s: no connection to the broker within a minute", key)
				return
			}
			w.mu.Lock()
			w.sent[key]++
			w.mu.Unlock()
			pctx, pcancel := context.WithTimeout(finish, 2*time.Second)
			_, err := w.conn.Publish(pctx, &paho.Publish{QoS: 1, Topic: wire.RequestTopic, Payload: dsstest.Cmd("SET", key, fmt.Sprint(n), "NX"),
				Properties: &paho.PublishProperties{ResponseTopic: w.topic, CorrelationData: []byte(key),
					User: paho.UserProperties{{Key: wire.PropTimestamp, Value: ts}}}})
			pcancel()
			if err != nil {
				w.drop()
				continue
			}
			if version, ok := w.await(key); ok {
				w.acked[key] = version
				break
			}
			w.drop() // no answer: the broker went away; send it again
		}
	}
}

// await waits for the answer to key: its version when it says the write
// was applied; false after 2 s without an answer, or after an answer that
// asks to try again (busy, unavailable).
func (w *writer) await(key string) (string, bool) {
	timeout := time.After(2 * time.Second)
	for {
		select {
		case p := <-w.got:
			if string(p.Properties.CorrelationData) != key {
				continue // a late answer to an earlier attempt of an earlier write
			}
			if string(p.Payload) == ":-1\r\n" {
				// NX not met on a key only this write sets: it was
				// applied before, and this attempt applied it again
				// instead of getting the first answer.
				w.t.Errorf("%s: a retry was carried out again (NX not met)", key)
				return "", true
			}
			if string(p.Payload) != "+OK\r\n" {
				time.Sleep(50 * time.Millisecond)
				return "", false
			}
			v, _ := dsstest.UserProperty(p, wire.PropTimestamp)
			return v, true
		case <-timeout:
			return "", false
		}
	}
}

// dss attach under load while Mosquitto is killed and restarted: no
// acknowledged write is lost (nor after dss itself is killed and
// restarted on its data), none is applied twice, and no request gets
// more answers than it was sent, nor two different ones. The dss process
// is built with the race detector.
func TestAttachBrokerRestartUnderLoad(t *testing.T) {
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
	bin := dssRaceBinary(t)
	data := t.TempDir()
	web := freeAddr(t)
	args := []string{"--data", data, "--client-id", "dss-e2e", "--presence", "mosquitto", "--node-id", "e2e"}
	p := startAttached(t, bin, m.URL(), web, args...)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var writers []*writer
	for i := range 4 {
		w := newWriter(t, m.Addr, fmt.Sprint("w", i))
		writers = append(writers, w)
		wg.Add(1)
		go func() { defer wg.Done(); w.run(ctx) }()
	}
	for range dsstest.Rounds(2, 10) {
		time.Sleep(400 * time.Millisecond)
		m.Kill()
		time.Sleep(200 * time.Millisecond)
		m.Restart()
		waitHTTPReady(t, p, web)
	}
	time.Sleep(400 * time.Millisecond)
	stop()
	wg.Wait()

	dupes := fetchMetrics(t, web, "dss_attach_duplicate_requests_total")
	// dss itself crashes and comes back on its data.
	p.kill()
	p = startAttached(t, bin, m.URL(), web, args...)

	c := dsstest.Dial(t, m.Addr, "checker")
	total := 0
	for _, w := range writers {
		if len(w.acked) == 0 {
			t.Errorf("%s: no write acknowledged", w.id)
		}
		for key, version := range w.acked {
			total++
			get := c.Request(dsstest.Cmd("GET", key))
			got, _ := dsstest.UserProperty(get, wire.PropTimestamp)
			if len(get.Payload) < 4 || got != version {
				t.Errorf("%s: GET %q version %s after the faults, want the acknowledged write's %s (lost, or applied again)", key, get.Payload, got, version)
			}
		}
		w.mu.Lock()
		for key, answers := range w.answer {
			if len(answers) > w.sent[key] {
				t.Errorf("%s: %d answers to %d requests", key, len(answers), w.sent[key])
			}
			var first *paho.Publish
			for _, a := range answers {
				if string(a.Payload) != "+OK\r\n" {
					continue // busy or unavailable: not carried out
				}
				if first == nil {
					first = a
					continue
				}
				v1, _ := dsstest.UserProperty(first, wire.PropTimestamp)
				v2, _ := dsstest.UserProperty(a, wire.PropTimestamp)
				if v1 != v2 {
					t.Errorf("%s: answered %s and %s: applied twice", key, v1, v2)
				}
			}
		}
		w.mu.Unlock()
	}
	t.Logf("%d acknowledged writes checked; %s", total, dupes)
	if t.Failed() {
		t.Logf("dss:\n%s", p.out)
	}
}

// fetchMetrics returns the lines of /metrics that start with prefix.
func fetchMetrics(t *testing.T, web, prefix string) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(dsstest.Metrics(t, web), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

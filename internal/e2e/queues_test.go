package e2e_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
)

// TestQueuedMessagesStayWithinTheirBound feeds offline sessions ten times
// what --max-queued-bytes allows, through a real dss serve process: the
// memory counted as queued stays within the bound, the server's RSS does
// not grow with what was published after the queues were full, and a
// session coming back gets the newest of its messages, in order.
func TestQueuedMessagesStayWithinTheirBound(t *testing.T) {
	const (
		payload    = 100_000
		total      = 16 << 20 // --max-queued-bytes
		perSession = 8 << 20  // --max-queued-bytes-per-session
		sessions   = 4
		warmup     = 1000 // messages: 100 MB, the queues full many times over
		measured   = 1500 // messages after the warm-up: 150 MB
		// What the RSS may grow by after the warm-up: the collector's
		// timing and its headroom (64 MiB), far below what queues
		// without a bound would hold (150 MB more).
		allowedGrowth = 64 << 20
	)
	addr, httpAddr := freeAddr(t), freeAddr(t)
	p := startDSS(t, addr, "--in-memory", "--http-listen", httpAddr,
		"--max-queued-bytes", strconv.Itoa(total), "--max-queued-bytes-per-session", strconv.Itoa(perSession))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	expiry := uint32(3600)
	for i := 0; i < sessions; i++ {
		c := paho.NewClient(paho.ClientConfig{Conn: mustDial(t, addr)})
		if _, err := c.Connect(ctx, &paho.Connect{ClientID: fmt.Sprint("offline-", i), KeepAlive: 30, CleanStart: true,
			Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "feed/#", QoS: 1}}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Disconnect(&paho.Disconnect{}); err != nil {
			t.Fatal(err)
		}
	}
	feeder, err := dial(ctx, addr, "feeder")
	if err != nil {
		t.Fatal(err)
	}
	defer feeder.close()
	seq := uint64(0)
	publish := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			seq++
			b := make([]byte, payload)
			binary.BigEndian.PutUint64(b, seq)
			if _, err := feeder.paho.Publish(ctx, &paho.Publish{QoS: 1, Topic: "feed/x", Payload: b}); err != nil {
				t.Fatalf("publish %d: %v", seq, err)
			}
		}
	}

	publish(warmup)
	base := rss(t, p.cmd.Process.Pid)
	peak := base
	for i := 0; i < measured/100; i++ {
		publish(100)
		peak = max(peak, rss(t, p.cmd.Process.Pid))
		if q := dsstest.Metric(t, httpAddr, "dss_mqtt_queued_bytes"); q > total {
			t.Fatalf("dss_mqtt_queued_bytes %v past --max-queued-bytes %d", q, total)
		}
	}
	dropped := dsstest.Metric(t, httpAddr, `dss_mqtt_queued_messages_dropped_total{limit="total"}`) +
		dsstest.Metric(t, httpAddr, `dss_mqtt_queued_messages_dropped_total{limit="session"}`)
	t.Logf("RSS after %d MB queued %d MiB, peak over %d MB more %d MiB; %v messages dropped",
		warmup*payload/1_000_000, base>>20, measured*payload/1_000_000, peak>>20, dropped)
	if peak-base > allowedGrowth {
		t.Fatalf("RSS grew from %d MiB to %d MiB while the queues were full", base>>20, peak>>20)
	}
	// Each session held at most its share: the rest was dropped.
	if kept := float64(sessions*(warmup+measured)) - dropped; kept*payload > total {
		t.Fatalf("%v messages dropped of %d: %v kept, more than %d bytes", dropped, sessions*(warmup+measured), kept, total)
	}

	// A session that comes back gets the newest messages, in order,
	// ending with the last one published.
	got := make(chan uint64, 1024)
	back := paho.NewClient(paho.ClientConfig{Conn: mustDial(t, addr),
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			got <- binary.BigEndian.Uint64(pr.Packet.Payload)
			return true, nil
		}}})
	if _, err := back.Connect(ctx, &paho.Connect{ClientID: "offline-0", KeepAlive: 30,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}); err != nil {
		t.Fatal(err)
	}
	defer back.Disconnect(&paho.Disconnect{})
	var first, prev uint64
	for prev != seq {
		select {
		case n := <-got:
			if first == 0 {
				first = n
			} else if n != prev+1 {
				t.Fatalf("message %d after %d: the kept messages are the newest, in order", n, prev)
			}
			prev = n
		case <-ctx.Done():
			t.Fatalf("no message %d; the last was %d", seq, prev)
		}
	}
	if kept := seq - first + 1; kept*payload > perSession {
		t.Fatalf("the session kept %d messages of %d bytes, more than its bound of %d", kept, payload, perSession)
	}
}

package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
)

// QoS 1 messages flow from publishers to subscribers on other nodes while
// a subscriber's node and then the publishers' node are killed (SIGKILL)
// and restarted: every message acknowledged to its publisher reaches every
// subscriber that stayed connected. The nodes are built with the race
// detector.
func TestClusterQoS1ThroughNodeKills(t *testing.T) {
	tc := startRaceCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	stay := connectMQTT(t, n3.mqtt, "stays")
	stay.sub("flow/#", 1)
	gone := connectMQTT(t, n2.mqtt, "goes")
	gone.sub("flow/#", 1)

	const publishers = 4
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < publishers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes := []*member{n1, n2, n3} // n1 first; then wherever one answers
			seq := 0
			for attempt := 0; ; attempt++ {
				select {
				case <-stop:
					return
				default:
				}
				m := nodes[attempt%len(nodes)]
				c, err := tryConnectMQTT(t, m.mqtt, fmt.Sprint("pub-", w))
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				for {
					select {
					case <-stop:
						c.close()
						return
					default:
					}
					id := fmt.Sprintf("%d-%d", w, seq)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					res, err := c.paho.Publish(ctx, &paho.Publish{Topic: "flow/" + strconv.Itoa(w), QoS: 1, Payload: []byte(id)})
					cancel()
					if err != nil || res == nil || res.ReasonCode >= 0x80 {
						c.drop()
						break
					}
					mu.Lock()
					acked[id] = true
					mu.Unlock()
					seq++
				}
			}
		}()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitFor := func(n int) {
		dsstest.EventuallyWithin(t, writeLimit, fmt.Sprint(n, " messages acknowledged"), func() bool { return count() >= n })
	}
	waitFor(200)
	n2.proc.kill() // a subscriber's node
	waitFor(count() + 200)
	tc.start(n2)
	waitFor(count() + 200)
	n1.proc.kill() // the publishers' node
	waitFor(count() + 200)
	tc.start(n1)
	waitFor(count() + 200)
	close(stop)
	wg.Wait()

	mu.Lock()
	want := len(acked)
	missing := map[string]bool{}
	for id := range acked {
		missing[id] = true
	}
	mu.Unlock()
	deadline := time.After(writeLimit)
	for len(missing) > 0 {
		select {
		case p := <-stay.msgs:
			delete(missing, string(p.Payload))
		case <-deadline:
			n := 0
			var some []string
			for id := range missing {
				if n++; n <= 10 {
					some = append(some, id)
				}
			}
			t.Fatalf("%d of %d acknowledged messages never reached the subscriber that stayed connected, such as %v", len(missing), want, some)
		}
	}
	t.Logf("%d acknowledged messages, all delivered", want)
}

package server_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// TestPipelinedRequestsKeepWhatTheirResponsesNeed sends many requests on
// one connection without waiting, to a server whose answers wait for the
// journal: the connection reads each request into the memory of the one
// before, so everything a response or the state keeps of a request (the
// response topic, the correlation data, the protocol version it names,
// the fencing token) must have been copied by then.
func TestPipelinedRequestsKeepWhatTheirResponsesNeed(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{DataDir: t.TempDir()})
	c := dsstest.Dial(t, s.Addr(), "pipeliner")
	c.Subscribe("pipe/#")

	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := []paho.UserProperty{ts(dsstest.Now()), ft(fmt.Sprintf("1:%d:holder-%03d", i, i))}
			if i%10 == 9 {
				user = append(user, paho.UserProperty{Key: wire.PropProtocolVersion, Value: fmt.Sprintf("%d.0", 10+i)})
			}
			res, err := c.Publish(&paho.Publish{
				QoS: 1, Topic: wire.RequestTopic,
				Payload: dsstest.Cmd("SET", fmt.Sprintf("key-%03d", i), fmt.Sprintf("value-%03d", i)),
				Properties: &paho.PublishProperties{
					ResponseTopic:   fmt.Sprintf("pipe/%03d", i),
					CorrelationData: []byte(fmt.Sprintf("correlation-%03d", i)),
					User:            user,
				},
			})
			if err != nil || res.ReasonCode != 0 {
				t.Errorf("request %d: %v %+v", i, err, res)
			}
		}()
	}
	wg.Wait()

	seen := make(map[int]bool)
	for range n {
		p := c.Next()
		var i int
		if _, err := fmt.Sscanf(p.Topic, "pipe/%03d", &i); err != nil || seen[i] {
			t.Fatalf("response on %q", p.Topic)
		}
		seen[i] = true
		if got, want := string(p.Properties.CorrelationData), fmt.Sprintf("correlation-%03d", i); got != want {
			t.Errorf("response on %s: correlation data %q, want %q", p.Topic, got, want)
		}
		if i%10 == 9 {
			if got, want := userProperty(p, wire.PropRequestProtocol), fmt.Sprintf("%d.0", 10+i); got != want {
				t.Errorf("response on %s: %s %q, want %q", p.Topic, wire.PropRequestProtocol, got, want)
			}
			continue
		}
		expect(t, p.Topic, p, "+OK\r\n", "any")
	}

	for i := range n {
		key := fmt.Sprintf("key-%03d", i)
		if i%10 == 9 {
			expect(t, key, c.Request(dsstest.Cmd("GET", key)), "$-1\r\n", "")
			continue
		}
		expect(t, key, c.Request(dsstest.Cmd("GET", key)), fmt.Sprintf("$9\r\nvalue-%03d\r\n", i), "any")
		// The token stored for the key is the request's: the same token
		// passes, one of the same time from another holder does not.
		expect(t, key, c.Set([]string{key, "again"}, ft(fmt.Sprintf("1:%d:holder-%03d", i, i))), "+OK\r\n", "any")
		expect(t, key, c.Set([]string{key, "other"}, ft(fmt.Sprintf("1:%d:holder-%03d", i, i-1))), errPayload(wire.ErrFencingLower), "")
	}
}

func userProperty(p *paho.Publish, key string) string {
	v, _ := dsstest.UserProperty(p, key)
	return v
}

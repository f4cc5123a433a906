package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// TestResponsesStayTheirs runs many clients at once, with a watcher
// subscribed to every response topic: the memory of a response (its
// topic, correlation data and envelope) is recycled once every receiver
// has acknowledged it, so a response that reached anyone with another's
// topic or correlation data would show here. Answers that wait for the
// journal take the write loops; the others are written at once.
func TestResponsesStayTheirs(t *testing.T) {
	for _, cfg := range []struct {
		name string
		cfg  server.Config
	}{{"journal", server.Config{DataDir: t.TempDir()}}, {"memory", server.Config{}}} {
		t.Run(cfg.name, func(t *testing.T) {
			s := dsstest.StartServer(t, cfg.cfg)
			watcher := dsstest.DialNoSubscribe(t, s.Addr(), "watcher")
			watcher.Subscribe("clients/+/services/statestore/_any_/command/invoke/response")

			const clients, requests = 8, 150
			var wg sync.WaitGroup
			for w := range clients {
				c := dsstest.Dial(t, s.Addr(), fmt.Sprintf("w%d", w))
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range requests {
						args, want := []string{"SET", c.ID, "v"}, "+OK\r\n"
						if i%2 == 1 {
							args, want = []string{"VDEL", c.ID, "other"}, ":-1\r\n"
						}
						corr := fmt.Sprintf("%s/%d", c.ID, i)
						res, err := c.Publish(&paho.Publish{
							QoS: 1, Topic: wire.RequestTopic, Payload: dsstest.Cmd(args...),
							Properties: &paho.PublishProperties{ResponseTopic: c.ResponseTopic, CorrelationData: []byte(corr),
								User: []paho.UserProperty{ts(dsstest.Now())}},
						})
						if err != nil || res.ReasonCode != 0 {
							t.Errorf("%s: %v %+v", corr, err, res)
							return
						}
						var p *paho.Publish
						select {
						case p = <-c.Messages:
						case <-time.After(dsstest.Timeout):
							t.Errorf("%s: no response", corr)
							return
						}
						if p.Topic != c.ResponseTopic || string(p.Properties.CorrelationData) != corr || string(p.Payload) != want {
							t.Errorf("%s: response on %q with %q: %q", corr, p.Topic, p.Properties.CorrelationData, p.Payload)
							return
						}
					}
				}()
			}
			wg.Wait()
			for range clients * requests {
				p := watcher.Next()
				owner, _, _ := strings.Cut(string(p.Properties.CorrelationData), "/")
				if p.Topic != "clients/"+owner+"/services/statestore/_any_/command/invoke/response" {
					t.Fatalf("the watcher got %q on %q", p.Properties.CorrelationData, p.Topic)
				}
			}
		})
	}
}

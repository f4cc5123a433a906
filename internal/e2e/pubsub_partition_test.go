package e2e_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
)

// links are the connections between the nodes of a cluster under test:
// node a reaches node b through a proxy of its own, links[a][b].
type links map[string]map[string]*dsstest.Proxy

// startLinkedCluster starts three nodes that reach each other through
// proxies the test controls, each with an HTTP listener.
func startLinkedCluster(t *testing.T) (*testCluster, links) {
	t.Helper()
	bin := dssBinary
	if dsstest.Long() || os.Getenv("DSS_E2E_RACE") != "" {
		bin = raceDSS(t)
	}
	var ls links
	tc := startClusterWith(t, bin, 3, func(ms []*member) {
		ls = links{}
		for _, a := range ms {
			ls[a.id] = map[string]*dsstest.Proxy{}
			for _, b := range ms {
				if a != b {
					ls[a.id][b.id] = dsstest.NewProxy(t, b.cluster)
				}
			}
		}
		for _, a := range ms {
			var list []string
			for _, b := range ms {
				addr := b.cluster
				if a != b {
					addr = ls[a.id][b.id].Addr()
				}
				list = append(list, b.id+"="+addr)
			}
			a.peers = strings.Join(list, ",")
			a.http = dsstest.NodeAddr(t)
		}
	})
	return tc, ls
}

// isolate cuts node id off from the others, both ways, its connections
// open but silent (cut); or heals the cut, every connection through it
// reset as peers that timed out would.
func (ls links) isolate(id string, cut bool) {
	for a, m := range ls {
		for b, p := range m {
			if a == id || b == id {
				p.Hang(cut)
				if !cut {
					p.Reset()
				}
			}
		}
	}
}

// A node cut off from the majority keeps serving its own clients, the
// partition is visible in logs, /readyz, /metrics and dss cluster status,
// and once it heals everything converges without a restart: the messages
// each side kept for the other arrive, routes and retained messages made
// on either side hold everywhere, and a client id connected on both sides
// is left to its newer connection.
func TestClusterPartitionAndHeal(t *testing.T) {
	tc, ls := startLinkedCluster(t)
	n1, n3 := tc.members[0], tc.members[2]
	s1 := connectMQTT(t, n1.mqtt, "s1")
	s1.sub("p/#", 1)
	s3 := connectMQTT(t, n3.mqtt, "s3")
	s3.sub("p/#", 1)
	p1 := connectMQTT(t, n1.mqtt, "p1")
	p3 := connectMQTT(t, n3.mqtt, "p3")

	ls.isolate(n3.id, true)
	dsstest.EventuallyWithin(t, writeLimit, "n1 and n3 see each other unreachable", func() bool {
		st1, err1 := tc.status(n1)
		st3, err3 := tc.status(n3)
		return err1 == nil && err3 == nil && messagesTo(st1, n3.id) == "down" && messagesTo(st3, n1.id) == "down"
	})
	code, body := dsstest.HTTPGet(t, n1.http, "/metrics")
	if code != http.StatusOK || !strings.Contains(body, `dss_cluster_relay_peer_up{peer="n3"} 0`) || !strings.Contains(body, `dss_cluster_relay_peer_up{peer="n2"} 1`) {
		t.Fatalf("/metrics of n1 during the partition: %d\n%s", code, grepLines(body, "relay_peer_up"))
	}
	dsstest.EventuallyWithin(t, writeLimit, "n3 is not ready and says why", func() bool {
		code, body := dsstest.HTTPGet(t, n3.http, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "messages to n1 fail")
	})
	if code, body := dsstest.HTTPGet(t, n1.http, "/readyz"); code != http.StatusOK || !strings.Contains(body, "messages to n3 fail") {
		t.Fatalf("/readyz of n1: %d %q", code, body)
	}
	if !strings.Contains(n1.proc.out.String(), "cluster peer unreachable for messages") {
		t.Fatalf("n1 did not log that n3 is unreachable:\n%s", n1.proc.out)
	}

	// Each side serves its own clients: messages, new subscriptions,
	// retained messages, connections.
	p3.pub(&paho.Publish{Topic: "p/minority", QoS: 1, Payload: []byte("minor")})
	p1.pub(&paho.Publish{Topic: "p/majority", QoS: 1, Payload: []byte("major")})
	if p := s3.next(); string(p.Payload) != "minor" {
		t.Fatalf("s3 got %q on its own node", p.Payload)
	}
	if p := s1.next(); string(p.Payload) != "major" {
		t.Fatalf("s1 got %q on its own node", p.Payload)
	}
	q3 := connectMQTT(t, n3.mqtt, "q3")
	q3.sub("q/#", 1)
	p3.pub(&paho.Publish{Topic: "r/x", QoS: 1, Retain: true, Payload: []byte("from the minority")})
	p1.pub(&paho.Publish{Topic: "r/y", QoS: 1, Retain: true, Payload: []byte("from the majority")})
	dupOld := connectMQTT(t, n1.mqtt, "dup")
	time.Sleep(10 * time.Millisecond) // a later CONNECT by the clocks
	dupNew := connectMQTT(t, n3.mqtt, "dup")

	ls.isolate(n3.id, false)
	// What each side kept for the other arrives.
	if p := s1.next(); string(p.Payload) != "minor" {
		t.Fatalf("s1 got %q after the heal", p.Payload)
	}
	if p := s3.next(); string(p.Payload) != "major" {
		t.Fatalf("s3 got %q after the heal", p.Payload)
	}
	// The client id goes to the newer connection.
	dupOld.awaitDisconnect(0x8E)
	dupNew.none(0)
	// The route made in the minority holds on the majority.
	dsstest.EventuallyWithin(t, writeLimit, "a subscription made during the partition receives from n1", func() bool {
		p1.pub(&paho.Publish{Topic: "q/1", QoS: 1, Payload: []byte("q")})
		select {
		case <-q3.msgs:
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	})
	// Retained messages of both sides, on both sides.
	for _, c := range []struct {
		m      *member
		topic  string
		want   string
		client string
	}{{n1, "r/x", "from the minority", "rx1"}, {n3, "r/y", "from the majority", "ry3"}} {
		dsstest.EventuallyWithin(t, writeLimit, "retained "+c.topic+" on "+c.m.id, func() bool {
			sub, err := tryConnectMQTT(t, c.m.mqtt, c.client)
			if err != nil {
				return false
			}
			defer sub.close()
			sub.sub(c.topic, 1)
			select {
			case p := <-sub.msgs:
				return string(p.Payload) == c.want
			case <-time.After(300 * time.Millisecond):
				return false
			}
		})
	}
	dsstest.EventuallyWithin(t, writeLimit, "n1 and n3 reach each other again", func() bool {
		st1, err1 := tc.status(n1)
		code, _ := dsstest.HTTPGet(t, n3.http, "/readyz")
		return err1 == nil && messagesTo(st1, n3.id) == "up" && code == http.StatusOK
	})
	if !strings.Contains(n1.proc.out.String(), "cluster peer's message stream up again") {
		t.Fatalf("n1 did not log that n3 is reachable again:\n%s", n1.proc.out)
	}
}

func messagesTo(st cluster.Status, id string) string {
	for _, m := range st.Members {
		if m.ID == id {
			return m.Messages
		}
	}
	return ""
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

package server_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// roles returns the leader of a cluster started by startCluster and its
// followers.
func roles(t *testing.T, servers []*server.Server) (*server.Server, []*server.Server) {
	t.Helper()
	var leader string
	dsstest.Eventually(t, "a leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, _, err := servers[0].ClusterStatus(ctx)
		leader = st.Leader
		return err == nil && leader != ""
	})
	var l *server.Server
	var followers []*server.Server
	for i, s := range servers {
		if fmt.Sprint("n", i+1) == leader {
			l = s
		} else {
			followers = append(followers, s)
		}
	}
	return l, followers
}

// unavailable is the payload of "the state store is unavailable".
var unavailable = "-ERR " + wire.ErrUnavailable.Text() + "\r\n"

// excused reports whether an "unavailable" answer to a request sent while
// the cluster's term was before is explained by an election since: a
// leader lost on an overloaded machine (its process stalled past its
// lease). The test then sends the request again, as a client does; an
// answer "unavailable" while the same leader served fails the test.
func excused(t *testing.T, servers []*server.Server, before uint64, what string) {
	t.Helper()
	if after := term(servers); after == before {
		t.Fatalf("%s: %q while the leader of term %d served", what, unavailable, before)
	}
	t.Logf("%s: unavailable during an election; sent again", what)
}

// send sends one request through p and returns its response, sending it
// again while it is answered "unavailable" during an election.
func send(t *testing.T, servers []*server.Server, p *dsstest.Pipe, req dsstest.PipeRequest) *packets.Publish {
	t.Helper()
	for {
		before := term(servers)
		res := p.Request(req)
		if string(res.Payload) != unavailable {
			return res
		}
		excused(t, servers, before, fmt.Sprintf("%q", req.Payload))
	}
}

// target is a server a test sends its requests to: a single node, or the
// leader or a follower of a cluster.
type target struct {
	name    string
	addr    string
	servers []*server.Server // to tell an election
}

// everyPath starts a single node and a 3-node cluster and returns the
// three ways a client reaches the store.
func everyPath(t *testing.T) []target {
	t.Helper()
	single := dsstest.StartServer(t, server.Config{})
	servers := startCluster(t, 3)
	leader, followers := roles(t, servers)
	return []target{{"single", single.Addr(), []*server.Server{single}}, {"leader", leader.Addr(), servers}, {"follower", followers[0].Addr(), servers}}
}

func tsUser() packets.User { return packets.User{Key: wire.PropTimestamp, Value: dsstest.Now()} }

// TestFencingTokensThroughAFollowerUnderLoad sends, on four connections
// to a follower at once, batches of SETs that each carry the key's
// fencing token: every one must pass. The connection reads each request
// into the memory of the one before, so a forwarded write that kept a
// token's node id in that memory compared another token (a data race,
// which the race detector reports) and was refused "lower version".
func TestFencingTokensThroughAFollowerUnderLoad(t *testing.T) {
	servers := startCluster(t, 3)
	_, followers := roles(t, servers)
	const conns, rounds, batch = 4, 20, 25
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := dsstest.DialPipe(t, followers[0].Addr(), fmt.Sprint("fenced-", c))
			key := fmt.Sprint("fenced-key-", c)
			// Tokens of the same time that differ only in the node id,
			// whose bytes the next request overwrites.
			token := fmt.Sprintf("%015d:%05d:holder-%d-%s", time.Now().UnixMilli(), 7, c, "zzzzzzzzzzzzzzzz")
			first := p.Request(dsstest.PipeRequest{Payload: dsstest.Cmd("SET", key, "v0"), Correlation: []byte("first"),
				User: []packets.User{tsUser(), {Key: wire.PropFencingToken, Value: token}}})
			if string(first.Payload) != "+OK\r\n" {
				t.Errorf("%s: first SET: %q", key, first.Payload)
				return
			}
			for r := range rounds {
				var reqs []dsstest.PipeRequest
				for i := range batch {
					n := r*batch + i
					reqs = append(reqs, dsstest.PipeRequest{
						Payload:     dsstest.Cmd("SET", key, strconv.Itoa(n)),
						Correlation: dsstest.Correlation(n),
						User:        []packets.User{tsUser(), {Key: wire.PropFencingToken, Value: token}},
					})
					// A request whose user properties put other bytes
					// where the token's node id was.
					reqs = append(reqs, dsstest.PipeRequest{
						Payload:     dsstest.Cmd("GET", "other"),
						Correlation: []byte(fmt.Sprint("get-", n)),
						User:        []packets.User{{Key: "padding-padding", Value: "000000000000000:00000:aaaaaaaaaaaaaaaaaaaaaaaaa"}},
					})
				}
				before := term(servers)
				p.Write(reqs...)
				responses := p.Responses(len(reqs))
				for _, req := range reqs {
					res := responses[string(req.Correlation)]
					if string(req.Correlation[:4]) == "get-" {
						continue
					}
					for string(res.Payload) == unavailable {
						excused(t, servers, before, key)
						before = term(servers)
						res = p.Request(req)
					}
					if string(res.Payload) != "+OK\r\n" {
						t.Errorf("%s: SET %s with the key's own token: %q", key, req.Correlation, res.Payload)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestPipelinedSetsAreAppliedInOrder sends two SETs of one key back to
// back on one connection, many times, through a single node, a cluster's
// leader and a follower: the second value must win every time. A
// follower that forwarded each write on its own let them overtake each
// other.
func TestPipelinedSetsAreAppliedInOrder(t *testing.T) {
	for _, tg := range everyPath(t) {
		t.Run(tg.name, func(t *testing.T) {
			p := dsstest.DialPipe(t, tg.addr, "ordered-"+tg.name)
			checked := 0
			for r := range 100 {
				key := fmt.Sprint("ordered-", r%7)
				first, second := fmt.Sprint("first-", r), fmt.Sprint("second-", r)
				before := term(tg.servers)
				p.Write(
					dsstest.PipeRequest{Payload: dsstest.Cmd("SET", key, first), Correlation: dsstest.Correlation(3 * r), User: []packets.User{tsUser()}},
					dsstest.PipeRequest{Payload: dsstest.Cmd("SET", key, second), Correlation: dsstest.Correlation(3*r + 1), User: []packets.User{tsUser()}},
				)
				elected := false
				for corr, res := range p.Responses(2) {
					if string(res.Payload) == unavailable {
						excused(t, tg.servers, before, fmt.Sprintf("round %d: SET %s", r, corr))
						elected = true
						continue
					}
					if string(res.Payload) != "+OK\r\n" {
						t.Fatalf("round %d: SET %s: %q", r, corr, res.Payload)
					}
				}
				if elected {
					// Which of the two took effect is unknown.
					continue
				}
				checked++
				got := send(t, tg.servers, p, dsstest.PipeRequest{Payload: dsstest.Cmd("GET", key), Correlation: dsstest.Correlation(3*r + 2)})
				if want := fmt.Sprintf("$%d\r\n%s\r\n", len(second), second); string(got.Payload) != want {
					t.Fatalf("round %d through the %s: GET %s = %q after SET %s then SET %s, want %q", r, tg.name, key, got.Payload, first, second, want)
				}
			}
			if checked < 50 {
				t.Fatalf("only %d of 100 rounds ran without an election", checked)
			}
		})
	}
}

// TestAReusedCorrelationWithAnotherRequestIsApplied sends a request, then
// a different one with the same correlation data: a cluster recognises a
// retry by the request as well, so the second is applied, while the
// first sent again is answered as the first time, without being applied
// again.
func TestAReusedCorrelationWithAnotherRequestIsApplied(t *testing.T) {
	for _, tg := range everyPath(t) {
		t.Run(tg.name, func(t *testing.T) {
			p := dsstest.DialPipe(t, tg.addr, "reuser-"+tg.name)
			corr := []byte("the-same-correlation")
			for i := range 20 {
				key := fmt.Sprint("reused-", i)
				res := send(t, tg.servers, p, dsstest.PipeRequest{Payload: dsstest.Cmd("SET", key, "v"), Correlation: corr, User: []packets.User{tsUser()}})
				if string(res.Payload) != "+OK\r\n" {
					t.Fatalf("SET %s: %q", key, res.Payload)
				}
			}
			for i := range 20 {
				key := fmt.Sprint("reused-", i)
				res := send(t, tg.servers, p, dsstest.PipeRequest{Payload: dsstest.Cmd("GET", key), Correlation: dsstest.Correlation(i)})
				if string(res.Payload) != "$1\r\nv\r\n" {
					t.Fatalf("GET %s after a SET that reused correlation data: %q", key, res.Payload)
				}
			}
			// A retry: the same request with the same correlation data is
			// answered with the first version and not applied again.
			set := dsstest.PipeRequest{Payload: dsstest.Cmd("SET", "retried", "once"), Correlation: []byte("retry"), User: []packets.User{tsUser()}}
			v1, _ := dsstest.Property(send(t, tg.servers, p, set), wire.PropTimestamp)
			set.User = []packets.User{tsUser()} // a retry may carry a new clock
			v2, _ := dsstest.Property(send(t, tg.servers, p, set), wire.PropTimestamp)
			if tg.name != "single" && v1 != v2 {
				t.Fatalf("a retry was applied again: versions %s and %s", v1, v2)
			}
		})
	}
}

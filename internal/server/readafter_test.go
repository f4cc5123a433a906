package server_test

import (
	"fmt"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// TestAGetSeesTheWriteBeforeIt sends a SET and then a GET of one key on
// one connection, back to back or the GET after the SET's answer, through
// a single node, a leader and a follower: the GET sees the SET, whether
// it is linearizable or asks for the node's copy as it is (stale). A
// follower answers a write once the leader has applied it, before its own
// copy may have, so the client's reads wait there for its copy.
func TestAGetSeesTheWriteBeforeIt(t *testing.T) {
	staleRead := packets.User{Key: wire.PropConsistency, Value: wire.ConsistencyStale}
	for _, tg := range everyPath(t) {
		for _, c := range []struct {
			name      string
			user      []packets.User
			pipelined bool
		}{
			{"pipelined", nil, true},
			{"pipelined-stale", []packets.User{staleRead}, true},
			{"after-answer", nil, false},
			{"after-answer-stale", []packets.User{staleRead}, false},
		} {
			t.Run(tg.name+"/"+c.name, func(t *testing.T) {
				p := dsstest.DialPipe(t, tg.addr, "reader-"+tg.name+"-"+c.name)
				checked := 0
				for r := range 100 {
					v := fmt.Sprint("v", r)
					set := dsstest.PipeRequest{Payload: dsstest.Cmd("SET", "rk-"+c.name, v), Correlation: dsstest.Correlation(2 * r), User: []packets.User{tsUser()}}
					get := dsstest.PipeRequest{Payload: dsstest.Cmd("GET", "rk-"+c.name), Correlation: dsstest.Correlation(2*r + 1), User: c.user}
					before := term(tg.servers)
					var s, g string
					if c.pipelined {
						p.Write(set, get)
						res := p.Responses(2)
						s, g = string(res[string(set.Correlation)].Payload), string(res[string(get.Correlation)].Payload)
					} else {
						s = string(p.Request(set).Payload)
						g = string(p.Request(get).Payload)
					}
					if s == unavailable || g == unavailable {
						excused(t, tg.servers, before, fmt.Sprintf("round %d", r))
						continue
					}
					if want := fmt.Sprintf("$%d\r\n%s\r\n", len(v), v); s != "+OK\r\n" || g != want {
						t.Fatalf("round %d through the %s: SET %q, then the GET %q, want %q", r, tg.name, s, g, want)
					}
					checked++
				}
				if checked < 50 {
					t.Fatalf("only %d of 100 rounds ran without an election", checked)
				}
			})
		}
	}
}

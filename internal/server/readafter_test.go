package server_test

import (
	"fmt"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
)

// TestAPipelinedGetSeesTheWriteBeforeIt sends a SET and a GET of one key
// back to back on one connection: the GET is answered after the SET is
// applied, and sees it, through a single node, a leader and a follower.
func TestAPipelinedGetSeesTheWriteBeforeIt(t *testing.T) {
	for _, tg := range everyPath(t) {
		t.Run(tg.name, func(t *testing.T) {
			p := dsstest.DialPipe(t, tg.addr, "reader-"+tg.name)
			checked := 0
			for r := range 100 {
				v := fmt.Sprint("v", r)
				set := dsstest.PipeRequest{Payload: dsstest.Cmd("SET", "rk", v), Correlation: dsstest.Correlation(2 * r), User: []packets.User{tsUser()}}
				get := dsstest.PipeRequest{Payload: dsstest.Cmd("GET", "rk"), Correlation: dsstest.Correlation(2*r + 1)}
				before := term(tg.servers)
				p.Write(set, get)
				res := p.Responses(2)
				s, g := string(res[string(set.Correlation)].Payload), string(res[string(get.Correlation)].Payload)
				if s == unavailable || g == unavailable {
					excused(t, tg.servers, before, fmt.Sprintf("round %d", r))
					continue
				}
				if want := fmt.Sprintf("$%d\r\n%s\r\n", len(v), v); s != "+OK\r\n" || g != want {
					t.Fatalf("round %d through the %s: SET %q, then the GET sent after it %q, want %q", r, tg.name, s, g, want)
				}
				checked++
			}
			if checked < 50 {
				t.Fatalf("only %d of 100 rounds ran without an election", checked)
			}
		})
	}
}

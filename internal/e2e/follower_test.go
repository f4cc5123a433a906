//go:build unix

package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// hangBound is how long a write through a follower may take to be
// answered after its leader hung: docs/cluster.md promises an answer
// within 2 s (carried out by the new leader, or "unavailable"); the rest
// is room for a loaded machine running race-detecting builds. A follower
// that waited for the hung leader's answer took over 5 s.
const hangBound = 4 * time.Second

// TestClusterWriteThroughAFollowerWhenTheLeaderHangs stops the leader
// with SIGSTOP (it neither answers nor closes its connections) and times
// a write sent through a follower at once: the follower sends it to the
// new leader as soon as one is elected, or answers "unavailable" at its
// deadline; it never waits out the hung leader. DSS_LONG=1 runs ten
// rounds.
func TestClusterWriteThroughAFollowerWhenTheLeaderHangs(t *testing.T) {
	tc := startRaceCluster(t, 3)
	rounds := dsstest.Rounds(2, 10)
	var times []time.Duration
	for round := range rounds {
		leader := tc.leader()
		follower := tc.others(leader)[0]
		c := dsstest.Dial(t, follower.mqtt, fmt.Sprintf("hang-r%d", round))
		// The follower's stream to the leader is open and used.
		writeUntilOK(t, c, "warm", fmt.Sprint(round))

		if err := leader.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p := try(c, 3*hangBound, dsstest.Cmd("SET", "during-hang", fmt.Sprint(round)), ts())
		took := time.Since(start)
		if err := leader.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if p == nil {
			t.Fatalf("round %d: a write through follower %s had no answer %v after leader %s hung", round, follower.id, 3*hangBound, leader.id)
		}
		if s := string(p.Payload); s != "+OK\r\n" && s != "-ERR "+wire.ErrUnavailable.Text()+"\r\n" {
			t.Fatalf("round %d: %q", round, s)
		}
		t.Logf("round %d: leader %s hung; a write through follower %s answered %q after %v", round, leader.id, follower.id, p.Payload, took.Round(time.Millisecond))
		times = append(times, took)
		if took > hangBound {
			t.Fatalf("round %d: the write was answered after %v, want within %v", round, took, hangBound)
		}
		// The old leader is back as a follower before the next round.
		tc.leader()
	}
	slices.Sort(times)
	t.Logf("a write through a follower after its leader hung: median %v, max %v over %d rounds", times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), len(times))
}

// TestClusterPipelinedRequestsThroughAFollower sends batches of requests
// in one write to a follower running a race-detecting build: SETs that
// carry the key's fencing token, each followed by a request whose user
// properties take the token's place in the connection's read buffer, and
// two SETs of a key back to back. Every token passes, the second value of
// each pair wins, and the race detector finds nothing.
func TestClusterPipelinedRequestsThroughAFollower(t *testing.T) {
	tc := startRaceCluster(t, 3)
	follower := tc.others(tc.leader())[0]
	p := dsstest.DialPipe(t, follower.mqtt, "pipelined")
	token := fmt.Sprintf("%015d:%05d:holder-zzzzzzzzzzzzzzzzzzzz", time.Now().UnixMilli(), 3)
	user := func(withToken bool) []packets.User {
		u := []packets.User{{Key: wire.PropTimestamp, Value: dsstest.Now()}}
		if withToken {
			u = append(u, packets.User{Key: wire.PropFencingToken, Value: token})
		}
		return u
	}
	unavailable := "-ERR " + wire.ErrUnavailable.Text() + "\r\n"
	corr := 0
	next := func() []byte { corr++; return dsstest.Correlation(corr) }
	checked := 0
	for round := range 40 {
		first, second := fmt.Sprint("a", round), fmt.Sprint("b", round)
		reqs := []dsstest.PipeRequest{
			{Payload: dsstest.Cmd("SET", "fenced", first), Correlation: next(), User: user(true)},
			{Payload: dsstest.Cmd("GET", "x"), Correlation: next(), User: []packets.User{{Key: "padding-padding", Value: "000000000000000:00000:aaaaaaaaaaaaaaaaaaaaaa"}}},
			{Payload: dsstest.Cmd("SET", "fenced", second), Correlation: next(), User: user(true)},
		}
		p.Write(reqs...)
		res := p.Responses(len(reqs))
		a, b := string(res[string(reqs[0].Correlation)].Payload), string(res[string(reqs[2].Correlation)].Payload)
		if a == unavailable || b == unavailable {
			// An election on a loaded machine: which took effect is
			// unknown. The round proves nothing either way.
			t.Logf("round %d: unavailable during an election", round)
			continue
		}
		if a != "+OK\r\n" || b != "+OK\r\n" {
			t.Fatalf("round %d: SETs with the key's own fencing token answered %q and %q", round, a, b)
		}
		got := string(p.Request(dsstest.PipeRequest{Payload: dsstest.Cmd("GET", "fenced"), Correlation: next()}).Payload)
		if got == unavailable {
			continue
		}
		if want := fmt.Sprintf("$%d\r\n%s\r\n", len(second), second); got != want {
			t.Fatalf("round %d: GET after SET %s then SET %s: %q, want %q", round, first, second, got, want)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d of 40 rounds ran without an election", checked)
	}
}

// TestClusterAPeerDownIsLoggedOnce stops a follower: the leader logs
// that it cannot reach it once, not a line per failed heartbeat (raft
// writes five a second); when the follower is back, the leader says so
// with the count, and the first `dss cluster status` shows it reachable.
func TestClusterAPeerDownIsLoggedOnce(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.leader()
	follower := tc.others(leader)[0]
	// The mark before the kill: the leader logs the peer down within
	// milliseconds, which a mark taken after the kill could miss.
	mark := len(leader.proc.out.String())
	follower.proc.kill()
	// Three seconds of a peer down: fifteen heartbeats, and more appends.
	time.Sleep(3 * time.Second)
	var noise []string
	for _, line := range strings.Split(leader.proc.out.String()[mark:], "\n") {
		if (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) &&
			(strings.Contains(line, "="+follower.id+" ") || strings.Contains(line, follower.cluster)) {
			noise = append(noise, line)
		}
	}
	if len(noise) > 2 {
		t.Fatalf("%d warnings and errors about %s in 3 s with it down, want one:\n%s", len(noise), follower.id, strings.Join(noise, "\n"))
	}
	if !strings.Contains(strings.Join(noise, "\n"), "cluster peer unreachable") {
		t.Fatalf("the leader did not log %s unreachable:\n%s", follower.id, leader.proc.out.String()[mark:])
	}

	tc.start(follower)
	st, err := tc.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.ID == follower.id && m.Err != "" {
			t.Fatalf("the first status after %s restarted says %q", m.ID, m.Err)
		}
	}
	dsstest.EventuallyWithin(t, writeLimit, "the leader to log the follower reachable again", func() bool {
		return strings.Contains(leader.proc.out.String()[mark:], "cluster peer reachable again")
	})
	for _, line := range strings.Split(leader.proc.out.String()[mark:], "\n") {
		if strings.Contains(line, "cluster peer") {
			t.Log(line)
		}
	}
}

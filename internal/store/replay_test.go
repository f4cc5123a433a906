package store

import (
	"bytes"
	"iter"
	"math/rand/v2"
	"testing"
)

// TestReplayOverFuzzySnapshot takes a snapshot while commands keep being
// applied between its steps, then rebuilds the machine from the snapshot
// and the changes after the snapshot began. It must equal the original.
func TestReplayOverFuzzySnapshot(t *testing.T) {
	for round := 0; round < 20; round++ {
		// Every fourth round has keys enough for the index to split its
		// segments while the snapshot goes through them.
		keys, n := 50, 4000
		if round%4 == 3 {
			keys, n = 40000, 60000
		}
		seed := rand.Uint64()
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		cmds := randomCommands(r, n, keys)
		live := New()
		var journal []Change
		applyN := func(n int) {
			for ; n > 0 && len(cmds) > 0; n-- {
				var ch []Change
				_, ch = live.Apply(cmds[0], nil)
				cmds = cmds[1:]
				journal = append(journal, ch...)
			}
		}
		applyN(n * 3 / 8)
		start, depth := live.Seq(), live.keys.depth
		next, stop := iter.Pull(live.Entries())
		var snapshot []Change
		for {
			applyN(r.IntN(5 * n / 4000))
			c, ok := next()
			if !ok {
				break
			}
			snapshot = append(snapshot, c)
		}
		stop()
		if keys > 50 && live.keys.depth == depth {
			t.Fatalf("seed %d: the index did not split during the snapshot", seed)
		}
		applyN(len(cmds))

		rebuilt := New()
		for i := range snapshot {
			rebuilt.Replay(&snapshot[i])
		}
		for i := range journal {
			if journal[i].Seq > start {
				rebuilt.Replay(&journal[i])
			}
		}
		if !sameKeys(live, rebuilt) || live.Seq() != rebuilt.Seq() {
			t.Fatalf("seed %d: the rebuilt machine differs", seed)
		}
	}
}

// sameKeys compares the stored state of two machines (not the versions of
// refused commands, which a journal does not see).
func sameKeys(a, b *Machine) bool {
	if a.keys.len() != b.keys.len() || a.dataBytes != b.dataBytes || len(a.deadlines) != len(b.deadlines) || len(a.fences) != len(b.fences) {
		return false
	}
	entries := func(m *Machine) map[string]Change {
		out := make(map[string]Change)
		for c := range m.Entries() {
			out[c.Key] = c
		}
		return out
	}
	ea, eb := entries(a), entries(b)
	for k, x := range ea {
		y, ok := eb[k]
		if !ok || !bytes.Equal(x.Value, y.Value) || x.Version != y.Version || x.Fence != y.Fence ||
			x.Fenced != y.Fenced || x.ExpiresAt != y.ExpiresAt || x.Volatile != y.Volatile || x.Seq != y.Seq {
			return false
		}
	}
	return true
}

func TestReplayVersionFloor(t *testing.T) {
	m := New()
	m.Replay(&Change{Seq: 7, Version: v(500, 3)})
	if m.MaxVersion() != v(500, 3) || m.Seq() != 7 || m.Len() != 0 {
		t.Fatalf("floor: max %v seq %d len %d", m.MaxVersion(), m.Seq(), m.Len())
	}
}

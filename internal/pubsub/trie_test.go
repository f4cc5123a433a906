package pubsub

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// matches is the MQTT rule for one filter and one topic, written plainly
// as the reference the index is checked against.
func matches(filter, topic string) bool {
	if _, f, ok := SplitShared(filter); ok {
		filter = f
	}
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	fl, tl := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, f := range fl {
		if f == "#" {
			return true
		}
		if i >= len(tl) {
			return false
		}
		if f != "+" && f != tl[i] {
			return false
		}
	}
	return len(fl) == len(tl)
}

func TestMatchFollowsTheTopicRules(t *testing.T) {
	cases := []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"#", "a/b", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"+/+", "/x", true},
		{"a//b", "a//b", true},
		{"$share/g/a/+", "a/b", true},
		{"$SHARE/g/#", "a/b", true},
	}
	for _, c := range cases {
		var tr trie
		tr.add("n1", c.filter)
		var m Matches
		tr.match(c.topic, &m)
		got := len(m.Nodes) == 1 || len(m.Groups) == 1
		if got != c.want || got != matches(c.filter, c.topic) {
			t.Errorf("%q on %q: index %v, reference %v, want %v", c.filter, c.topic, got, matches(c.filter, c.topic), c.want)
		}
	}
}

// Random filters of several nodes, added and removed, match exactly as
// the reference says; every level left empty is removed.
func TestMatchAgreesWithTheReferenceUnderChurn(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	levels := []string{"a", "b", "c", "", "$SYS"}
	randFilter := func() string {
		n := 1 + r.IntN(4)
		var parts []string
		for i := 0; i < n; i++ {
			switch x := r.IntN(10); {
			case x == 0 && i == n-1:
				parts = append(parts, "#")
			case x < 3:
				parts = append(parts, "+")
			default:
				parts = append(parts, levels[r.IntN(len(levels))])
			}
		}
		f := strings.Join(parts, "/")
		if r.IntN(5) == 0 {
			f = "$share/g" + string(rune('0'+r.IntN(2))) + "/" + f
		}
		return f
	}
	randTopic := func() string {
		n := 1 + r.IntN(4)
		var parts []string
		for i := 0; i < n; i++ {
			parts = append(parts, levels[r.IntN(len(levels))])
		}
		return strings.Join(parts, "/")
	}
	s := New(nil)
	have := map[[2]string]bool{}
	nodes := []string{"n1", "n2", "n3"}
	for step := 0; step < 3000; step++ {
		node, f := nodes[r.IntN(3)], randFilter()
		var b Batch
		if have[[2]string{node, f}] && r.IntN(2) == 0 {
			b.Routes(node, nil, []string{f})
			delete(have, [2]string{node, f})
		} else {
			b.Routes(node, []string{f}, nil)
			have[[2]string{node, f}] = true
		}
		if err := s.Apply(b.Bytes()); err != nil {
			t.Fatal(err)
		}
		topic := randTopic()
		var m Matches
		s.Match(topic, &m)
		wantNodes := map[string]bool{}
		wantGroups := map[string][]string{}
		for k := range have {
			if !matches(k[1], topic) {
				continue
			}
			if _, _, ok := SplitShared(k[1]); ok {
				wantGroups[k[1]] = append(wantGroups[k[1]], k[0])
			} else {
				wantNodes[k[0]] = true
			}
		}
		if len(m.Nodes) != len(wantNodes) {
			t.Fatalf("step %d topic %q: nodes %v, want %v", step, topic, m.Nodes, wantNodes)
		}
		for _, n := range m.Nodes {
			if !wantNodes[n] {
				t.Fatalf("step %d topic %q: node %s matched, want %v", step, topic, n, wantNodes)
			}
		}
		if len(m.Groups) != len(wantGroups) {
			t.Fatalf("step %d topic %q: groups %v, want %v", step, topic, m.Groups, wantGroups)
		}
		for _, g := range m.Groups {
			want := wantGroups[g.Key]
			slices.Sort(want)
			if !slices.Equal(g.Nodes, want) {
				t.Fatalf("step %d topic %q: group %s nodes %v, want %v", step, topic, g.Key, g.Nodes, want)
			}
		}
	}
	// Every route removed leaves an empty index.
	var b Batch
	for k := range have {
		b.Routes(k[0], nil, []string{k[1]})
	}
	if err := s.Apply(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if len(s.index.root.children) != 0 || len(s.routes) != 0 {
		t.Fatalf("levels left after every route was removed: %v, routes %v", s.index.root.children, s.routes)
	}
}

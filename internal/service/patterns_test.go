package service

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dssio/dss/internal/wire"
)

// TestWatchesRecipientsAgainstModel registers and unregisters keys and
// patterns at random, with literal starts of many lengths, shared and
// not, and checks every change's recipients against a model that
// matches the key against each registration in turn: the index of
// literal starts, the patterns that end in '*' and the check for
// duplicates (by a scan or by a set, past dedupeScan requesters) must
// give exactly the requesters the model does, each once.
func TestWatchesRecipientsAgainstModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	type reg struct {
		r       int
		text    string
		pattern bool
	}
	texts := []string{
		"a", "a/1", "a/2", "ab", "a/1/x", "é", "\xc3", // keys
		"*", "a*", "a/*", "a/1*", "a/1/*", "a/?", "a/[12]", "a/[!1]*",
		"*1", "*/x", "a/1/x", "ab*", "[a]*", "é*", "\xc3*", "\xc3\xa9*",
		"*a*", "?/1", "*/1/x", "a*/x", "[ab]/1", "*\xa9", "*é", "a]*", "*]x",
	}
	keys := []string{"a", "a/1", "a/2", "a/3", "ab", "abc", "a/1/x", "b", "é", "éa", "aé", "\xc3", "x1", "", "a/1/xx", "b/1/x", "a]/x", "]x"}
	model := map[reg]bool{}
	w := NewWatches[int, int]()
	for step := range 1500 {
		rg := reg{r: rng.IntN(24), text: texts[rng.IntN(len(texts))]}
		rg.pattern = rng.IntN(3) > 0
		if rng.IntN(3) == 0 {
			_, ok := w.Remove(rg.r, rg.text, rg.pattern)
			if ok != model[rg] {
				t.Fatalf("step %d: remove %+v: %v, model %v", step, rg, ok, model[rg])
			}
			delete(model, rg)
		} else {
			added, err := w.Add(rg.r, 4, rg.text, rg.pattern, step)
			if err != nil {
				t.Fatalf("step %d: add %+v: %v", step, rg, err)
			}
			if added == model[rg] {
				t.Fatalf("step %d: add %+v: added %v, model had it: %v", step, rg, added, model[rg])
			}
			model[rg] = true
		}
		// keep drops the registrations of odd values by odd requesters,
		// so that a requester is still told through another.
		keep := func(r int, _ string, v int, _ bool) bool { return r%2 == 0 || v%2 == 0 }
		values := map[reg]int{}
		for rg := range model {
			v, ok := w.Lookup(rg.r, rg.text, rg.pattern)
			if !ok {
				t.Fatalf("step %d: %+v not found", step, rg)
			}
			values[rg] = v
		}
		for _, key := range keys {
			var want []int
			for rg := range model {
				hit := rg.text == key
				if rg.pattern {
					hit = wire.MatchPattern(rg.text, key)
				}
				if hit && keep(rg.r, key, values[rg], rg.pattern) && !slices.Contains(want, rg.r) {
					want = append(want, rg.r)
				}
			}
			got := w.Recipients(key, keep)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: recipients of %q: %v, want %v", step, key, got, want)
			}
		}
	}
}

// TestPatternsLengthsFollowRegistrations: a pattern is indexed by its
// longer literal end, and a literal's length is looked up while a
// pattern with a literal of that length is registered, and no longer
// after the last one goes.
func TestPatternsLengthsFollowRegistrations(t *testing.T) {
	w := NewWatches[string, int]()
	for i, p := range []string{"a/*", "b/*", "a/b/*", "*", "*/t", "a*/temp", "x*", "*a*"} {
		if _, err := w.Add(fmt.Sprint("r", i), 2, p, true, 0); err != nil {
			t.Fatal(err)
		}
	}
	lengths := func(start, end []int) {
		t.Helper()
		if got := w.pats.start.lengths; !slices.Equal(got, start) {
			t.Fatalf("lengths of literal starts %v, want %v", got, start)
		}
		if got := w.pats.end.lengths; !slices.Equal(got, end) {
			t.Fatalf("lengths of literal ends %v, want %v", got, end)
		}
	}
	lengths([]int{0, 1, 2, 4}, []int{2, 5})
	n := 0
	for g := w.pats.start.byText[""]; g != nil; g = g.next {
		n++
	}
	if n != 2 {
		t.Fatalf("%d patterns without a literal end, want 2 (* and *a*)", n)
	}
	w.Remove("r0", "a/*", true)
	lengths([]int{0, 1, 2, 4}, []int{2, 5})
	w.Remove("r1", "b/*", true)
	w.Remove("r3", "*", true)
	w.Remove("r4", "*/t", true)
	lengths([]int{0, 1, 4}, []int{5})
	got := w.Recipients("a/b/temp", nil)
	slices.Sort(got)
	if !slices.Equal(got, []string{"r2", "r5", "r7"}) {
		t.Fatalf("recipients %v, want r2 r5 r7", got)
	}
	for _, r := range []string{"r2", "r5", "r6", "r7"} {
		w.Drop(r)
	}
	for _, x := range []*literals[string, int]{&w.pats.start, &w.pats.end} {
		if len(x.lengths) != 0 || len(x.perLength) != 0 || len(x.byText) != 0 {
			t.Fatalf("nothing registered, yet lengths %v %v, literals %d", x.lengths, x.perLength, len(x.byText))
		}
	}
}

// TestRecipientsOnceAmongMany: a requester registered for the key and
// for two patterns among many other requesters is told once, whether the
// duplicates are found by a scan or by a set.
func TestRecipientsOnceAmongMany(t *testing.T) {
	for _, others := range []int{0, dedupeScan - 2, dedupeScan, 3 * dedupeScan} {
		w := NewWatches[int, int]()
		for r := range others {
			if _, err := w.Add(r, 2, "s/*", true, 0); err != nil {
				t.Fatal(err)
			}
		}
		me := -1
		for _, reg := range []struct {
			text    string
			pattern bool
		}{{"s/1", false}, {"s/?", true}, {"s/*", true}, {"*", true}} {
			if _, err := w.Add(me, 2, reg.text, reg.pattern, 0); err != nil {
				t.Fatal(err)
			}
		}
		got := w.Recipients("s/1", nil)
		if len(got) != others+1 {
			t.Fatalf("%d others: %d recipients, want %d", others, len(got), others+1)
		}
		slices.Sort(got)
		if len(slices.Compact(slices.Clone(got))) != len(got) || got[0] != me {
			t.Fatalf("%d others: recipients %v", others, got)
		}
	}
}

package service

import (
	"slices"
	"unicode/utf8"

	"github.com/dssio/dss/internal/wire"
)

// patterns holds the pattern registrations (KEYNOTIFY pattern PATTERN,
// dss's extension) of a Watches. Each pattern is indexed by its longer
// literal end: its literal start (wire.PatternPrefix), or its literal end
// (wire.PatternSuffix) when that is longer. A change is matched against
// the patterns found by one map lookup for each length of literal start,
// and of literal end, that some pattern has (patterns written alike share
// one: a thousand patterns <p>/<i>/* cost one lookup, as do a thousand
// */<i>/temp), and for those only the rest of the pattern is matched. So
// a change costs about what a change of a key watched by its key does,
// however many patterns there are; only patterns with no literal at
// either end (*, *x*) are matched against every key.
type patterns[R comparable, V any] struct {
	byText map[string]*patternGroup[R, V]
	// start indexes the patterns by their literal start (those with no
	// literal at either end under ""), end by their literal end.
	start, end literals[R, V]
	byReq      map[R]map[string]struct{}
}

// literals indexes patterns by a literal end of theirs. The patterns of
// one literal are a list through their groups, so that a lookup reaches
// the first group straight from the map.
type literals[R comparable, V any] struct {
	byText map[string]*patternGroup[R, V]
	// lengths are the lengths of the literals in byText, each once,
	// ascending; perLength counts the literals of each.
	lengths   []int
	perLength map[int]int
}

// patternGroup is one pattern and the requesters registered for it, each
// with the value of its registration.
type patternGroup[R comparable, V any] struct {
	text string
	// lit is the literal end the pattern is indexed by, its start or
	// (atEnd) its end; rest is the pattern without it; tail says that
	// rest is "*", which every key with the literal matches.
	lit, rest   string
	atEnd, tail bool
	// valid says whether the pattern is UTF-8: one that is not matches
	// no key.
	valid bool
	// prev and next link the groups of one literal.
	prev, next *patternGroup[R, V]
	reqs       map[R]V
}

func newPatterns[R comparable, V any]() patterns[R, V] {
	return patterns[R, V]{
		byText: make(map[string]*patternGroup[R, V]),
		start:  newLiterals[R, V](),
		end:    newLiterals[R, V](),
		byReq:  make(map[R]map[string]struct{}),
	}
}

func newLiterals[R comparable, V any]() literals[R, V] {
	return literals[R, V]{byText: make(map[string]*patternGroup[R, V]), perLength: make(map[int]int)}
}

// newPatternGroup returns the group of pattern, with no requester.
func newPatternGroup[R comparable, V any](pattern string) *patternGroup[R, V] {
	g := &patternGroup[R, V]{text: pattern, valid: utf8.ValidString(pattern), reqs: make(map[R]V)}
	prefix, suffix := wire.PatternPrefix(pattern), wire.PatternSuffix(pattern)
	if len(suffix) > len(prefix) {
		g.lit, g.rest, g.atEnd = suffix, pattern[:len(pattern)-len(suffix)], true
	} else {
		g.lit, g.rest = prefix, pattern[len(prefix):]
	}
	g.tail = g.rest == "*"
	return g
}

// matches reports whether key, which has g.lit at its start (at its end
// when g.atEnd) and is valid UTF-8, matches g's pattern. A literal end
// meets a wildcard (an ASCII byte) or a set, which match whole
// characters, so the rest of a valid pattern matches the rest of the key
// exactly when the whole pattern matches the whole key.
func (g *patternGroup[R, V]) matches(key string) bool {
	switch {
	case !g.valid:
		return false
	case g.tail:
		return true
	case g.atEnd:
		return wire.MatchPattern(g.rest, key[:len(key)-len(g.lit)])
	}
	return wire.MatchPattern(g.rest, key[len(g.lit):])
}

// match appends to gs the patterns that key matches. A key that is not
// valid UTF-8 matches none; it is checked once, when a pattern's literal
// begins or ends it (most changes of a busy store have none). It
// allocates nothing while gs has room.
func (p *patterns[R, V]) match(key string, gs []*patternGroup[R, V]) []*patternGroup[R, V] {
	checked := false
	for _, end := range []bool{false, true} {
		x := &p.start
		if end {
			x = &p.end
		}
		for _, n := range x.lengths {
			if n > len(key) {
				break
			}
			lit := key[:n]
			if end {
				lit = key[len(key)-n:]
			}
			first := x.byText[lit]
			if first == nil {
				continue
			}
			if !checked {
				if !utf8.ValidString(key) {
					return gs
				}
				checked = true
			}
			for g := first; g != nil; g = g.next {
				if g.matches(key) {
					gs = append(gs, g)
				}
			}
		}
	}
	return gs
}

// index returns the literals that index g.
func (p *patterns[R, V]) index(g *patternGroup[R, V]) *literals[R, V] {
	if g.atEnd {
		return &p.end
	}
	return &p.start
}

// add indexes g by g.lit.
func (x *literals[R, V]) add(g *patternGroup[R, V]) {
	first := x.byText[g.lit]
	if first == nil {
		n := len(g.lit)
		if x.perLength[n] == 0 {
			i, _ := slices.BinarySearch(x.lengths, n)
			x.lengths = slices.Insert(x.lengths, i, n)
		}
		x.perLength[n]++
	} else {
		first.prev = g
	}
	g.next = first
	x.byText[g.lit] = g
}

// remove takes g out of the index.
func (x *literals[R, V]) remove(g *patternGroup[R, V]) {
	if g.next != nil {
		g.next.prev = g.prev
	}
	if g.prev != nil {
		g.prev.next = g.next
		return
	}
	if g.next != nil {
		x.byText[g.lit] = g.next
		return
	}
	delete(x.byText, g.lit)
	n := len(g.lit)
	if x.perLength[n]--; x.perLength[n] > 0 {
		return
	}
	delete(x.perLength, n)
	if i, ok := slices.BinarySearch(x.lengths, n); ok {
		x.lengths = slices.Delete(x.lengths, i, i+1)
	}
}

// lookup returns the value of r's registration for pattern.
func (p *patterns[R, V]) lookup(r R, pattern string) (V, bool) {
	if g := p.byText[pattern]; g != nil {
		v, ok := g.reqs[r]
		return v, ok
	}
	var zero V
	return zero, false
}

// count returns the pattern registrations of r.
func (p *patterns[R, V]) count(r R) int { return len(p.byReq[r]) }

// put registers r for pattern with v, or sets the value of its
// registration.
func (p *patterns[R, V]) put(r R, pattern string, v V) {
	g := p.byText[pattern]
	if g == nil {
		g = newPatternGroup[R, V](pattern)
		p.byText[pattern] = g
		p.index(g).add(g)
	}
	g.reqs[r] = v
	mine := p.byReq[r]
	if mine == nil {
		mine = make(map[string]struct{})
		p.byReq[r] = mine
	}
	mine[pattern] = struct{}{}
}

// remove unregisters r for pattern and reports whether it was.
func (p *patterns[R, V]) remove(r R, pattern string) (V, bool) {
	var zero V
	g := p.byText[pattern]
	if g == nil {
		return zero, false
	}
	v, ok := g.reqs[r]
	if !ok {
		return zero, false
	}
	delete(g.reqs, r)
	delete(p.byReq[r], pattern)
	if len(p.byReq[r]) == 0 {
		delete(p.byReq, r)
	}
	if len(g.reqs) == 0 {
		delete(p.byText, pattern)
		p.index(g).remove(g)
	}
	return v, true
}

// of returns the patterns r is registered for.
func (p *patterns[R, V]) of(r R) []string {
	out := make([]string, 0, len(p.byReq[r]))
	for pattern := range p.byReq[r] {
		out = append(out, pattern)
	}
	return out
}

package service

import (
	"slices"
	"unicode/utf8"

	"github.com/dssio/dss/internal/wire"
)

// patterns holds the pattern registrations (KEYNOTIFY pattern PATTERN,
// dss's extension) of a Watches. A change is matched against the
// patterns whose literal start (wire.PatternPrefix) begins the key: one
// map lookup for each length of literal start that some pattern has
// (patterns written alike share one: a thousand patterns <p>/<i>/* cost
// one lookup), and a match of the rest of the pattern only for the
// patterns found. So a change costs about what a change of a key watched
// by its key does, however many patterns there are.
type patterns[R comparable, V any] struct {
	byText   map[string]*patternGroup[R, V]
	byPrefix map[string][]*patternGroup[R, V] // literal start -> its patterns
	// lengths are the lengths of the literal starts in byPrefix, each
	// once, ascending; perLength counts the literal starts of each.
	lengths   []int
	perLength map[int]int
	byReq     map[R]map[string]struct{}
}

// patternGroup is one pattern and the requesters registered for it, each
// with the value of its registration.
type patternGroup[R comparable, V any] struct {
	text, prefix string
	// rest is the pattern after its literal start; tail says that it is
	// "*", which every key with the literal start matches.
	rest string
	tail bool
	// valid says whether the pattern is UTF-8: one that is not matches
	// no key.
	valid bool
	// at is the group's index in byPrefix[prefix].
	at   int
	reqs map[R]V
}

func newPatterns[R comparable, V any]() patterns[R, V] {
	return patterns[R, V]{
		byText:    make(map[string]*patternGroup[R, V]),
		byPrefix:  make(map[string][]*patternGroup[R, V]),
		perLength: make(map[int]int),
		byReq:     make(map[R]map[string]struct{}),
	}
}

// matches reports whether key, which begins with g.prefix and is valid
// UTF-8, matches g's pattern. The literal start ends where a wildcard
// (an ASCII byte) begins, so the rest of a valid pattern matches the rest
// of the key exactly when the whole pattern matches the whole key.
func (g *patternGroup[R, V]) matches(key string) bool {
	if !g.valid {
		return false
	}
	return g.tail || wire.MatchPattern(g.rest, key[len(g.prefix):])
}

// match appends to gs the patterns that key matches. A key that is not
// valid UTF-8 matches none; it is checked once, when a pattern's literal
// start begins it (most changes of a busy store have none). It allocates
// nothing while gs has room.
func (p *patterns[R, V]) match(key string, gs []*patternGroup[R, V]) []*patternGroup[R, V] {
	checked := false
	for _, n := range p.lengths {
		if n > len(key) {
			break
		}
		same := p.byPrefix[key[:n]]
		if len(same) == 0 {
			continue
		}
		if !checked {
			if !utf8.ValidString(key) {
				return gs
			}
			checked = true
		}
		for _, g := range same {
			if g.matches(key) {
				gs = append(gs, g)
			}
		}
	}
	return gs
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
		prefix := wire.PatternPrefix(pattern)
		g = &patternGroup[R, V]{
			text:   pattern,
			prefix: prefix,
			rest:   pattern[len(prefix):],
			tail:   pattern[len(prefix):] == "*",
			valid:  utf8.ValidString(pattern),
			reqs:   make(map[R]V),
		}
		p.byText[pattern] = g
		same := p.byPrefix[prefix]
		if len(same) == 0 {
			p.addLength(len(prefix))
		}
		g.at = len(same)
		p.byPrefix[prefix] = append(same, g)
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
		same := p.byPrefix[g.prefix]
		last := len(same) - 1
		same[g.at] = same[last]
		same[g.at].at = g.at
		same[last] = nil
		if last == 0 {
			delete(p.byPrefix, g.prefix)
			p.removeLength(len(g.prefix))
		} else {
			p.byPrefix[g.prefix] = same[:last]
		}
	}
	return v, true
}

// addLength counts a new literal start of n bytes.
func (p *patterns[R, V]) addLength(n int) {
	if p.perLength[n] == 0 {
		i, _ := slices.BinarySearch(p.lengths, n)
		p.lengths = slices.Insert(p.lengths, i, n)
	}
	p.perLength[n]++
}

// removeLength forgets a literal start of n bytes.
func (p *patterns[R, V]) removeLength(n int) {
	if p.perLength[n]--; p.perLength[n] > 0 {
		return
	}
	delete(p.perLength, n)
	if i, ok := slices.BinarySearch(p.lengths, n); ok {
		p.lengths = slices.Delete(p.lengths, i, i+1)
	}
}

// of returns the patterns r is registered for.
func (p *patterns[R, V]) of(r R) []string {
	out := make([]string, 0, len(p.byReq[r]))
	for pattern := range p.byReq[r] {
		out = append(out, pattern)
	}
	return out
}

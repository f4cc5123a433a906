package service

import "github.com/dssio/dss/internal/wire"

// patterns holds the pattern registrations (KEYNOTIFY pattern PATTERN,
// dss's extension) of a Watches. A change is matched against the
// patterns whose literal start (wire.PatternPrefix) begins the key: one
// map lookup per prefix length up to the longest, and a full match only
// for those; so a thousand patterns with distinct prefixes cost about
// what one does.
type patterns[R comparable, V any] struct {
	byText   map[string]*patternGroup[R, V]
	byPrefix map[string]map[string]*patternGroup[R, V] // literal start -> text -> group
	// longest is the longest literal start registered.
	longest int
	byReq   map[R]map[string]struct{}
}

// patternGroup is one pattern and the requesters registered for it, each
// with the value of its registration.
type patternGroup[R comparable, V any] struct {
	text, prefix string
	reqs         map[R]V
}

func newPatterns[R comparable, V any]() patterns[R, V] {
	return patterns[R, V]{
		byText:   make(map[string]*patternGroup[R, V]),
		byPrefix: make(map[string]map[string]*patternGroup[R, V]),
		byReq:    make(map[R]map[string]struct{}),
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
		g = &patternGroup[R, V]{text: pattern, prefix: wire.PatternPrefix(pattern), reqs: make(map[R]V)}
		p.byText[pattern] = g
		same := p.byPrefix[g.prefix]
		if same == nil {
			same = make(map[string]*patternGroup[R, V])
			p.byPrefix[g.prefix] = same
		}
		same[pattern] = g
		p.longest = max(p.longest, len(g.prefix))
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
		delete(same, pattern)
		if len(same) == 0 {
			delete(p.byPrefix, g.prefix)
			if len(g.prefix) == p.longest {
				p.longest = 0
				for prefix := range p.byPrefix {
					p.longest = max(p.longest, len(prefix))
				}
			}
		}
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

package broker

import (
	"unicode/utf8"

	mqtt "github.com/dssio/dss/internal/mqtt"

	"github.com/dssio/dss/internal/wire"
)

// patterns holds the pattern registrations (KEYNOTIFY pattern PATTERN,
// dss's extension) of this node's connections. A change is matched
// against the patterns whose literal start (wire.PatternPrefix) begins the
// key: one map lookup per prefix length up to the longest, and a full
// match only for those; so a thousand patterns with distinct prefixes
// cost about what one does. Guarded by the registry's mu.
type patterns struct {
	byText   map[string]*patternGroup
	byPrefix map[string]map[string]*patternGroup // literal start -> text -> group
	// longest is the longest literal start registered.
	longest int
	byConn  map[*mqtt.Client]map[string]struct{}
}

// patternGroup is one pattern and the connections registered for it.
type patternGroup struct {
	text, prefix string
	conns        map[*mqtt.Client]struct{}
}

func newPatterns() patterns {
	return patterns{
		byText:   make(map[string]*patternGroup),
		byPrefix: make(map[string]map[string]*patternGroup),
		byConn:   make(map[*mqtt.Client]map[string]struct{}),
	}
}

// has reports whether cl is registered for pattern.
func (p *patterns) has(cl *mqtt.Client, pattern string) bool {
	_, ok := p.byConn[cl][pattern]
	return ok
}

// count returns the pattern registrations of cl.
func (p *patterns) count(cl *mqtt.Client) int { return len(p.byConn[cl]) }

// add registers cl for pattern.
func (p *patterns) add(cl *mqtt.Client, pattern string) {
	g := p.byText[pattern]
	if g == nil {
		g = &patternGroup{text: pattern, prefix: wire.PatternPrefix(pattern), conns: make(map[*mqtt.Client]struct{})}
		p.byText[pattern] = g
		same := p.byPrefix[g.prefix]
		if same == nil {
			same = make(map[string]*patternGroup)
			p.byPrefix[g.prefix] = same
		}
		same[pattern] = g
		p.longest = max(p.longest, len(g.prefix))
	}
	g.conns[cl] = struct{}{}
	mine := p.byConn[cl]
	if mine == nil {
		mine = make(map[string]struct{})
		p.byConn[cl] = mine
	}
	mine[pattern] = struct{}{}
}

// remove unregisters cl for pattern and reports whether it was.
func (p *patterns) remove(cl *mqtt.Client, pattern string) bool {
	g := p.byText[pattern]
	if g == nil {
		return false
	}
	if _, ok := g.conns[cl]; !ok {
		return false
	}
	delete(g.conns, cl)
	delete(p.byConn[cl], pattern)
	if len(p.byConn[cl]) == 0 {
		delete(p.byConn, cl)
	}
	if len(g.conns) == 0 {
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
	return true
}

// of returns the patterns cl is registered for.
func (p *patterns) of(cl *mqtt.Client) []string {
	out := make([]string, 0, len(p.byConn[cl]))
	for pattern := range p.byConn[cl] {
		out = append(out, pattern)
	}
	return out
}

// matching calls fn for every connection registered for a pattern that
// key matches (once per pattern it is registered for).
func (p *patterns) matching(key string, fn func(cl *mqtt.Client)) {
	if len(p.byText) == 0 || !utf8.ValidString(key) {
		return
	}
	for n := 0; n <= min(len(key), p.longest); n++ {
		for _, g := range p.byPrefix[key[:n]] {
			if wire.MatchPattern(g.text, key) {
				for cl := range g.conns {
					fn(cl)
				}
			}
		}
	}
}

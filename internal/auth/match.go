package auth

import (
	"strings"

	"github.com/dssio/dss/internal/wire"
)

// Matching of MQTT topics and filters, and of key globs, without
// allocating: they run for every publish, subscription and state store
// request a policy governs.

// nextLevel splits s at its first '/': the level, the rest, and whether
// there was a '/'.
func nextLevel(s string) (level, rest string, more bool) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// topicMatches reports whether topic matches filter, by MQTT's rules: '+'
// is one level, a final '#' the parent level and everything below it,
// and a wildcard in the first level does not match a topic that starts
// with '$'.
func topicMatches(filter, topic string) bool {
	if len(topic) > 0 && topic[0] == '$' && len(filter) > 0 && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		f, frest, fmore := nextLevel(filter)
		if f == "#" {
			return true
		}
		t, trest, tmore := nextLevel(topic)
		if f != "+" && f != t {
			return false
		}
		switch {
		case !fmore && !tmore:
			return true
		case !tmore:
			// The topic ends here; the filter matches it only through a
			// final "/#".
			return frest == "#"
		case !fmore:
			return false
		}
		filter, topic = frest, trest
	}
}

// filterCovers reports whether every topic that filter f matches is
// matched by the granted filter g: a subscription to f gives nothing g
// does not grant.
func filterCovers(g, f string) bool {
	if len(f) > 0 && f[0] == '$' && len(g) > 0 && (g[0] == '+' || g[0] == '#') {
		return false // a wildcard first level matches no '$' topic
	}
	for {
		gl, grest, gmore := nextLevel(g)
		if gl == "#" {
			return true
		}
		fl, frest, fmore := nextLevel(f)
		switch {
		case fl == "#":
			return false // f reaches below where g stops or narrows
		case gl == "+":
		case fl == "+" || fl != gl:
			return false
		}
		switch {
		case !gmore && !fmore:
			return true
		case !fmore:
			// f ends here: g covers it only through a final "/#".
			return grest == "#"
		case !gmore:
			return false
		}
		g, f = grest, frest
	}
}

// validFilter reports whether f is a valid MQTT topic filter: '+' and '#'
// stand alone in their level, '#' only last.
func validFilter(f string) bool {
	if f == "" {
		return false
	}
	for {
		l, rest, more := nextLevel(f)
		if (strings.ContainsAny(l, "+#") && len(l) > 1) || (l == "#" && more) {
			return false
		}
		if !more {
			return true
		}
		f = rest
	}
}

// globMatches reports whether name matches the glob pattern, as Redis's
// KEYS does and as dss's KEYS does: one matcher, so that a key pattern
// of a policy means what the same pattern means to KEYS.
func globMatches(pattern string, name []byte) bool { return wire.MatchGlob(pattern, name) }

// globLiteral reports whether pattern has no special byte, so that it
// matches only itself.
func globLiteral(pattern string) bool { return !strings.ContainsAny(pattern, `*?[\`) }

// globQuote quotes the special bytes of s, so that a substituted value
// matches only itself within a pattern.
func globQuote(s string) string {
	if globLiteral(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// starMatches reports whether s matches pattern where '*' is any run of
// characters and nothing else is special: the matching of principals.
func starMatches(pattern, s string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			starP, starN = p, n
			p++
			continue
		case p < len(pattern) && pattern[p] == s[n]:
			p, n = p+1, n+1
			continue
		case starP >= 0:
			p, starN = starP+1, starN+1
			n = starN
			continue
		}
		return false
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

package wire

import (
	"strings"
	"unicode/utf8"
)

// MatchPattern reports whether key matches pattern as SCAN and pattern
// KEYNOTIFY match, which is how the vendor's clients document SCAN's
// patterns: a glob matched against the whole key, as UTF-8 text.
//
//   - '*' matches any run of characters, none included ('/' too);
//   - '?' matches one character (a code point, not a byte);
//   - '[abc]' one character of the set, '[a-z]' one in the range (by code
//     point; a range whose ends are reversed matches nothing), '[!...]' one
//     character not in the set. The first character after '[' or '[!' is
//     always a member, so '[]]' matches ']' and '[!]]' anything else; '-'
//     first or last is a member. A wildcard in a set is literal: '[*]',
//     '[?]', '[[]'.
//   - a '[' that no ']' closes is a literal '['; '\' is an ordinary
//     character (there is no escape: use a set).
//
// A key or a pattern that is not valid UTF-8 never matches.
func MatchPattern[P, K ~string | ~[]byte](pattern P, key K) bool {
	p, k := string(pattern), string(key)
	if !utf8.ValidString(p) || !utf8.ValidString(k) {
		return false
	}
	// Iterative, with one point of return for the last '*': linear in
	// practice and never recursive, whatever the pattern.
	starP, starK := -1, 0
	pi, ki := 0, 0
	for ki < len(k) {
		if pi < len(p) {
			c, n := utf8.DecodeRuneInString(p[pi:])
			r, rn := utf8.DecodeRuneInString(k[ki:])
			switch c {
			case '*':
				starP, starK = pi, ki
				pi++
				continue
			case '?':
				pi += n
				ki += rn
				continue
			case '[':
				if ok, next := matchSet(p, pi, r); next > 0 {
					if ok {
						pi, ki = next, ki+rn
						continue
					}
					goto backtrack
				}
				// An unclosed '[' is a literal.
				if r == '[' {
					pi++
					ki++
					continue
				}
			default:
				if c == r {
					pi += n
					ki += rn
					continue
				}
			}
		}
	backtrack:
		if starP < 0 {
			return false
		}
		// The last '*' takes one more character of the key.
		_, rn := utf8.DecodeRuneInString(k[starK:])
		starK += rn
		pi, ki = starP+1, starK
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchSet matches r against the set that starts at p[i] ('['). next is
// the index after the set, or 0 when no ']' closes it.
func matchSet(p string, i int, r rune) (ok bool, next int) {
	i++
	negate := false
	if i < len(p) && p[i] == '!' {
		negate = true
		i++
	}
	for first := true; i < len(p); first = false {
		c, n := utf8.DecodeRuneInString(p[i:])
		if c == ']' && !first {
			return ok != negate, i + n
		}
		i += n
		// A range: c, '-', and a character that is not the closing ']'.
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, hn := utf8.DecodeRuneInString(p[i+1:])
			if c <= r && r <= hi {
				ok = true
			}
			i += 1 + hn
			continue
		}
		if c == r {
			ok = true
		}
	}
	return false, 0
}

// PatternPrefix returns the literal start of pattern: every key that
// pattern matches begins with it.
func PatternPrefix(pattern string) string {
	if i := strings.IndexAny(pattern, "*?["); i >= 0 {
		return pattern[:i]
	}
	return pattern
}

// PatternSuffix returns the literal end of pattern: every key that
// pattern matches ends with it. It is what follows the last wildcard or
// bracket, so that no set can reach into it.
func PatternSuffix(pattern string) string {
	return pattern[strings.LastIndexAny(pattern, "*?[]")+1:]
}

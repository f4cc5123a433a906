package wire

// MatchGlob reports whether key matches the glob pattern of a KEYS
// request, as Redis's KEYS matches: '*' matches any run of bytes (also
// '/'), '?' any one byte, '[abc]' one of the bytes listed, '[a-z]' one in
// the range, '[^a]' or '[!a]' any other byte, and '\' makes the next byte
// literal. Matching is on bytes, not characters. The policy's key
// patterns match the same way.
func MatchGlob[P, K ~string | ~[]byte](pattern P, key K) bool {
	// Iterative with one point of return for the last '*': linear in
	// practice, and never recursive, whatever the pattern.
	var starP, starK = -1, 0
	p, k := 0, 0
	for k < len(key) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				starP, starK = p, k
				p++
				continue
			case '?':
				p++
				k++
				continue
			case '[':
				if ok, next := matchClass(pattern, p, key[k]); next > 0 {
					if ok {
						p, k = next, k+1
						continue
					}
					goto backtrack
				}
				// An unclosed '[' is a literal.
				if key[k] == '[' {
					p++
					k++
					continue
				}
			case '\\':
				if p+1 < len(pattern) {
					if pattern[p+1] == key[k] {
						p += 2
						k++
						continue
					}
					goto backtrack
				}
				if key[k] == '\\' {
					p++
					k++
					continue
				}
			default:
				if c == key[k] {
					p++
					k++
					continue
				}
			}
		}
	backtrack:
		if starP < 0 {
			return false
		}
		starK++
		p, k = starP+1, starK
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchClass matches b against the class that starts at pattern[p] ('[').
// next is the index after the class, or 0 when the class is not closed.
func matchClass[P ~string | ~[]byte](pattern P, p int, b byte) (ok bool, next int) {
	i := p + 1
	negate := false
	if i < len(pattern) && (pattern[i] == '^' || pattern[i] == '!') {
		negate = true
		i++
	}
	first := true
	for ; i < len(pattern); i++ {
		c := pattern[i]
		if c == ']' && !first {
			return ok != negate, i + 1
		}
		first = false
		if c == '\\' && i+1 < len(pattern) {
			i++
			c = pattern[i]
		}
		if i+2 < len(pattern) && pattern[i+1] == '-' && pattern[i+2] != ']' {
			lo, hi := c, pattern[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if b >= lo && b <= hi {
				ok = true
			}
			i += 2
			continue
		}
		if c == b {
			ok = true
		}
	}
	return false, 0
}

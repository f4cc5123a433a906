package resp

// ParseScanPage parses the payload of a SCAN response as the vendor's
// clients read it:
//
//	*1\r\n*<N>\r\n<N bulk strings>                    the last page
//	*2\r\n*<N>\r\n<N bulk strings>$<n>\r\n<token>\r\n   more follow
//
// and refuses what they refuse: an outer array of 0 or 3 or more
// elements, a null or missing array of keys, a null key, a missing or
// null token when the outer array has two elements, trailing bytes. keys
// and token alias b.
func ParseScanPage(b []byte) (keys [][]byte, token []byte, more bool, err error) {
	if len(b) < 4 || b[0] != '*' {
		return nil, nil, false, ErrSyntax
	}
	outer, rest, ok := parseLength(b[1:])
	if !ok || (outer != 1 && outer != 2) || len(rest) == 0 || rest[0] != '*' {
		return nil, nil, false, ErrSyntax
	}
	n, rest, ok := parseLength(rest[1:])
	if !ok || n > maxArrayLen || n > len(rest)/6 {
		return nil, nil, false, ErrSyntax
	}
	keys = make([][]byte, 0, n)
	for range n {
		var key []byte
		if key, rest, ok = parseBulk(rest); !ok {
			return nil, nil, false, ErrSyntax
		}
		keys = append(keys, key)
	}
	if outer == 2 {
		if token, rest, ok = parseBulk(rest); !ok {
			return nil, nil, false, ErrSyntax
		}
	}
	if len(rest) != 0 {
		return nil, nil, false, ErrSyntax
	}
	return keys, token, outer == 2, nil
}

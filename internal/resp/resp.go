// Package resp reads and writes the subset of RESP3 that the state store
// protocol uses: requests and notifications are arrays of bulk strings;
// replies are a simple string, a bulk string, a null bulk string, an integer
// or an error, and an array of bulk strings for dss's extension KEYS.
//
// Parsing never copies: the slices it returns alias the input. Encoding
// appends to a caller's buffer so that a hot path can reuse it.
package resp

import (
	"errors"
	"strconv"
)

// ErrSyntax is returned for input that is not well-formed RESP3 of the
// expected shape.
var ErrSyntax = errors.New("resp: syntax error")

// maxArrayLen bounds the element count of a parsed array, so that a tiny
// request cannot make the parser reserve a huge slice.
const maxArrayLen = 1 << 16

// ParseArray parses b, which must hold exactly one array of bulk strings
// and nothing after it. The elements are appended to dst[:0] and alias b.
func ParseArray(b []byte, dst [][]byte) ([][]byte, error) {
	dst = dst[:0]
	if len(b) == 0 || b[0] != '*' {
		return dst, ErrSyntax
	}
	n, rest, ok := parseLength(b[1:])
	if !ok || n > maxArrayLen || n > len(rest)/6 {
		// Every element takes at least six bytes ("$0\r\n\r\n"), so a
		// count beyond that cannot be honest.
		return dst, ErrSyntax
	}
	for i := 0; i < n; i++ {
		var elem []byte
		elem, rest, ok = parseBulk(rest)
		if !ok {
			return dst, ErrSyntax
		}
		dst = append(dst, elem)
	}
	if len(rest) != 0 {
		return dst, ErrSyntax
	}
	return dst, nil
}

// parseBulk reads "$<n>\r\n<n bytes>\r\n" from the front of b.
func parseBulk(b []byte) (elem, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '$' {
		return nil, nil, false
	}
	n, rest, ok := parseLength(b[1:])
	if !ok || len(rest) < n+2 || rest[n] != '\r' || rest[n+1] != '\n' {
		return nil, nil, false
	}
	return rest[:n:n], rest[n+2:], true
}

// parseLength reads a non-negative decimal followed by CRLF.
func parseLength(b []byte) (n int, rest []byte, ok bool) {
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i >= 10 {
			return 0, nil, false // beyond any length we accept
		}
		n = n*10 + int(b[i]-'0')
	}
	if i == 0 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, nil, false
	}
	return n, b[i+2:], true
}

// Kind is the type of a reply.
type Kind uint8

// The reply kinds of the protocol.
const (
	KindSimple  Kind = iota + 1 // +text
	KindBulk                    // $n value
	KindNull                    // $-1 (also _ in RESP3)
	KindInteger                 // :n
	KindError                   // -text
	KindArray                   // *n of bulk strings
	// KindScanPage is a SCAN response (ParseScanPage): Elems holds its
	// keys, Text its token when More is set.
	KindScanPage
)

// Reply is one parsed reply. Text aliases the parsed input.
type Reply struct {
	Kind Kind
	// Text is the simple string, the bulk string or the error text.
	Text []byte
	// Int is the value of an integer reply.
	Int int64
	// Elems are the elements of an array reply, or a SCAN page's keys.
	Elems [][]byte
	// More reports that a SCAN page has a token (in Text) for the next.
	More bool
}

// ParseReply parses b, which must hold exactly one reply.
func ParseReply(b []byte) (Reply, error) {
	if len(b) == 0 {
		return Reply{}, ErrSyntax
	}
	switch b[0] {
	case '+', '-':
		line, rest, ok := cutLine(b[1:])
		if !ok || len(rest) != 0 {
			return Reply{}, ErrSyntax
		}
		k := KindSimple
		if b[0] == '-' {
			k = KindError
		}
		return Reply{Kind: k, Text: line}, nil
	case ':':
		line, rest, ok := cutLine(b[1:])
		if !ok || len(rest) != 0 {
			return Reply{}, ErrSyntax
		}
		v, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			return Reply{}, ErrSyntax
		}
		return Reply{Kind: KindInteger, Int: v}, nil
	case '_':
		if string(b) != "_\r\n" {
			return Reply{}, ErrSyntax
		}
		return Reply{Kind: KindNull}, nil
	case '*':
		if len(b) > 4 && (b[1] == '1' || b[1] == '2') && b[2] == '\r' && b[4] == '*' {
			// An array whose first element is an array: a SCAN page.
			keys, token, more, err := ParseScanPage(b)
			if err != nil {
				return Reply{}, err
			}
			return Reply{Kind: KindScanPage, Elems: keys, Text: token, More: more}, nil
		}
		elems, err := ParseArray(b, nil)
		if err != nil {
			return Reply{}, err
		}
		return Reply{Kind: KindArray, Elems: elems}, nil
	case '$':
		if string(b) == "$-1\r\n" {
			return Reply{Kind: KindNull}, nil
		}
		elem, rest, ok := parseBulk(b)
		if !ok || len(rest) != 0 {
			return Reply{}, ErrSyntax
		}
		return Reply{Kind: KindBulk, Text: elem}, nil
	}
	return Reply{}, ErrSyntax
}

// cutLine splits b at the first CRLF. The line must not contain CR or LF.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				return b[:i], b[i+2:], true
			}
			return nil, nil, false
		case '\n':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// AppendArrayHeader appends "*<n>\r\n".
func AppendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends v as a bulk string.
func AppendBulk(b, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, '\r', '\n')
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendArray appends an array of bulk strings.
func AppendArray(b []byte, elems ...[]byte) []byte {
	b = AppendArrayHeader(b, len(elems))
	for _, e := range elems {
		b = AppendBulk(b, e)
	}
	return b
}

// AppendNull appends the null bulk string "$-1\r\n".
func AppendNull(b []byte) []byte { return append(b, "$-1\r\n"...) }

// AppendInt appends the integer reply ":<v>\r\n".
func AppendInt(b []byte, v int64) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '\r', '\n')
}

// AppendSimple appends the simple string "+<s>\r\n". s must not hold CR or LF.
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendError appends the error reply "-<s>\r\n". s must not hold CR or LF.
func AppendError(b []byte, s string) []byte {
	b = append(b, '-')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

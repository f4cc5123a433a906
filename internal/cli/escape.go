package cli

import (
	"unicode"
	"unicode/utf8"
)

// appendEscaped appends b for a line of text output: printable UTF-8 is
// written as is, a backslash as \\, newline, carriage return and tab as
// \n, \r and \t, and every other byte that is not printable text
// (control characters, invalid UTF-8) as \xHH. With space set a space is
// written as \x20, so that the text holds no space either. One value stays
// on one line, and the bytes can be read back.
func appendEscaped(dst, b []byte, space bool) []byte {
	const hex = "0123456789abcdef"
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == '\\':
			dst = append(dst, '\\', '\\')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == ' ' && space:
			dst = append(dst, '\\', 'x', '2', '0')
		case r == utf8.RuneError && n <= 1, !unicode.IsPrint(r) && r != ' ':
			for _, c := range b[:n] {
				dst = append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
			}
		default:
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return dst
}

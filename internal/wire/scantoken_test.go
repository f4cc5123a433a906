package wire

import (
	"bytes"
	"math"
	"testing"
)

func TestScanToken(t *testing.T) {
	for _, pos := range []ScanPosition{{0, 0}, {1, 1}, {math.MaxUint32, math.MaxUint64}, {42, 0x0d0a00ff0d0a00ff}} {
		tok := AppendScanToken(nil, pos)
		if !bytes.HasPrefix(tok, []byte("1;")) || bytes.Count(tok[:bytes.LastIndexByte(tok[:len(tok)-8], ';')+1], []byte(";")) != 2 {
			t.Fatalf("%+v: token %q is not digits;digits;bytes", pos, tok)
		}
		got, err := ParseScanToken(tok)
		if err != nil || got != pos {
			t.Fatalf("%+v: token %q read as %+v, %v", pos, tok, got, err)
		}
	}
	for _, tok := range []string{
		"", "1", "1;", "1;2", "1;2;", "1;2;1234567", "1;2;123456789", "2;2;12345678",
		"1;;12345678", "1;x;12345678", "1;4294967296;12345678", "1;99999999999;12345678", " 1;2;12345678",
		"\x00\xffx",
	} {
		if _, err := ParseScanToken([]byte(tok)); err != ErrBadScanToken {
			t.Errorf("token %q: %v, want %v", tok, err, ErrBadScanToken)
		}
	}
}

func FuzzParseScanToken(f *testing.F) {
	f.Add(AppendScanToken(nil, ScanPosition{7, 99}))
	f.Add([]byte("1;1;"))
	f.Fuzz(func(t *testing.T, tok []byte) {
		pos, err := ParseScanToken(tok)
		if err != nil {
			if err != ErrBadScanToken {
				t.Fatalf("error %v", err)
			}
			return
		}
		if again, _ := ParseScanToken(AppendScanToken(nil, pos)); again != pos {
			t.Fatalf("%q: %+v does not survive a round trip", tok, pos)
		}
	})
}

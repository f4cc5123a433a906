package resp

import (
	"bytes"
	"testing"
)

// TestParseScanPage reads the SCAN responses of the protocol's section 11
// and refuses what the vendor's client refuses.
func TestParseScanPage(t *testing.T) {
	good := []struct {
		payload string
		keys    []string
		token   string
		more    bool
	}{
		{"*1\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n", []string{"key1", "key2"}, "", false},
		{"*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\n1;1;\r\n", []string{"key1", "key2"}, "1;1;", true},
		{"*1\r\n*0\r\n", nil, "", false},
		{"*2\r\n*0\r\n$3\r\n\x00\xffx\r\n", nil, "\x00\xffx", true}, // an empty page, a binary token
		{"*2\r\n*1\r\n$3\r\n\r\n\x00\r\n$0\r\n\r\n", []string{"\r\n\x00"}, "", true},
	}
	for _, tt := range good {
		keys, token, more, err := ParseScanPage([]byte(tt.payload))
		if err != nil || more != tt.more || string(token) != tt.token || len(keys) != len(tt.keys) {
			t.Errorf("%q: %q %q %v %v", tt.payload, keys, token, more, err)
			continue
		}
		for i := range keys {
			if string(keys[i]) != tt.keys[i] {
				t.Errorf("%q: key %d = %q", tt.payload, i, keys[i])
			}
		}
		r, err := ParseReply([]byte(tt.payload))
		if err != nil || r.Kind != KindScanPage || r.More != tt.more || !bytes.Equal(r.Text, token) || len(r.Elems) != len(keys) {
			t.Errorf("ParseReply(%q) = %+v, %v", tt.payload, r, err)
		}
	}
	for _, bad := range []string{
		"*0\r\n",                             // outer array of 0
		"*3\r\n*0\r\n$1\r\na\r\n$1\r\nb\r\n", // of 3
		"*1\r\n*-1\r\n",                      // null keys array
		"*1\r\n*1\r\n$-1\r\n",                // null key
		"*2\r\n*0\r\n",                       // missing token
		"*2\r\n*0\r\n$-1\r\n",                // null token
		"*1\r\n*0\r\nx",                      // trailing bytes
		"*2\r\n*0\r\n$1\r\nt\r\n$1\r\nu\r\n", // trailing element
		"*1\r\n*2\r\n$4\r\nkey1\r\n",         // fewer keys than announced
		"*1\r\n$4\r\nkey1\r\n",               // keys not in an array
		"*1\r\n*1\r\n:1\r\n",                 // a key that is not a bulk string
		"",
	} {
		if _, _, _, err := ParseScanPage([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseScanPage(f *testing.F) {
	f.Add([]byte("*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\n1;1;\r\n"))
	f.Add([]byte("*1\r\n*0\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, token, more, err := ParseScanPage(b)
		if err != nil {
			return
		}
		// What parses is written back as the server writes it, and that
		// reads the same.
		var out []byte
		if more {
			out = AppendArrayHeader(out, 2)
		} else {
			out = AppendArrayHeader(out, 1)
		}
		out = AppendArray(out, keys...)
		if more {
			out = AppendBulk(out, token)
		}
		k2, t2, m2, err := ParseScanPage(out)
		if err != nil || m2 != more || !bytes.Equal(t2, token) || len(k2) != len(keys) {
			t.Fatalf("%q parsed as %q %q %v, written back as %q: %q %q %v %v", b, keys, token, more, out, k2, t2, m2, err)
		}
		for i := range keys {
			if !bytes.Equal(keys[i], k2[i]) {
				t.Fatalf("%q: key %d %q written back as %q", b, i, keys[i], k2[i])
			}
		}
	})
}

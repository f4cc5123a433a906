package resp

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseArray(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"*3\r\n$3\r\nset\r\n$7\r\nSETKEY2\r\n$6\r\nVALUE5\r\n", []string{"set", "SETKEY2", "VALUE5"}},
		{"*0\r\n", []string{}},
		{"*1\r\n$0\r\n\r\n", []string{""}},
		{"*2\r\n$3\r\nGET\r\n$5\r\na\r\nb\x00\r\n", []string{"GET", "a\r\nb\x00"}},
		{"*1\r\n$004\r\n\xff\xfe\r\n\r\n", []string{"\xff\xfe\r\n"}},
	}
	for _, tt := range tests {
		got, err := ParseArray([]byte(tt.in), nil)
		if err != nil {
			t.Errorf("ParseArray(%q): %v", tt.in, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("ParseArray(%q) = %q, want %q", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if string(got[i]) != tt.want[i] {
				t.Errorf("ParseArray(%q)[%d] = %q, want %q", tt.in, i, got[i], tt.want[i])
			}
		}
	}
}

func TestParseArrayRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"SET a b",
		"*",
		"*1",
		"*1\r\n",
		"*-1\r\n",
		"*1\n$1\r\na\r\n",
		"*1\r\n$1\r\nab\r\n",
		"*1\r\n$2\r\na\r\n",
		"*1\r\n$1\r\na",
		"*1\r\n$1\r\na\r",
		"*1\r\n$-1\r\n",
		"*1\r\n+OK\r\n",
		"*1\r\n$+1\r\na\r\n",
		"*1\r\n$1\r\na\r\nextra",
		"*2\r\n$1\r\na\r\n",
		"*99999999999\r\n",
		"*1\r\n$99999999999\r\na\r\n",
		"*1000\r\n$0\r\n\r\n",
	} {
		if got, err := ParseArray([]byte(in), nil); err == nil {
			t.Errorf("ParseArray(%q) = %q, want error", in, got)
		}
	}
}

func TestParseArrayReusesScratch(t *testing.T) {
	scratch := make([][]byte, 0, 8)
	in := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	allocs := testing.AllocsPerRun(100, func() {
		scratch, _ = ParseArray(in, scratch)
	})
	if allocs != 0 {
		t.Fatalf("ParseArray allocates %.0f times with a scratch slice", allocs)
	}
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		in   string
		want Reply
	}{
		{"+OK\r\n", Reply{Kind: KindSimple, Text: []byte("OK")}},
		{"$4\r\n1234\r\n", Reply{Kind: KindBulk, Text: []byte("1234")}},
		{"$0\r\n\r\n", Reply{Kind: KindBulk, Text: []byte{}}},
		{"$-1\r\n", Reply{Kind: KindNull}},
		{"_\r\n", Reply{Kind: KindNull}},
		{":1\r\n", Reply{Kind: KindInteger, Int: 1}},
		{":-1\r\n", Reply{Kind: KindInteger, Int: -1}},
		{"-ERR syntax error\r\n", Reply{Kind: KindError, Text: []byte("ERR syntax error")}},
	}
	for _, tt := range tests {
		got, err := ParseReply([]byte(tt.in))
		if err != nil || got.Kind != tt.want.Kind || got.Int != tt.want.Int || !bytes.Equal(got.Text, tt.want.Text) {
			t.Errorf("ParseReply(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	arr, err := ParseReply([]byte("*2\r\n$1\r\na\r\n$0\r\n\r\n"))
	if err != nil || arr.Kind != KindArray || len(arr.Elems) != 2 || string(arr.Elems[0]) != "a" || len(arr.Elems[1]) != 0 {
		t.Errorf("array reply: %+v, %v", arr, err)
	}
	if empty, err := ParseReply([]byte("*0\r\n")); err != nil || empty.Kind != KindArray || len(empty.Elems) != 0 {
		t.Errorf("empty array reply: %+v, %v", empty, err)
	}
	for _, in := range []string{"", "+OK", "+OK\r\nx", ":x\r\n", "$2\r\na\r\n", "*1\r\n$1\r\na\r\nx", "*2\r\n$1\r\na\r\n", "+O\nK\r\n"} {
		if got, err := ParseReply([]byte(in)); err == nil {
			t.Errorf("ParseReply(%q) = %+v, want error", in, got)
		}
	}
}

func TestAppend(t *testing.T) {
	var b []byte
	b = AppendArray(b, []byte("NOTIFY"), []byte("SET"), []byte("VALUE"), []byte("a\r\n"))
	if want := "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\na\r\n\r\n"; string(b) != want {
		t.Fatalf("AppendArray = %q, want %q", b, want)
	}
	checks := map[string]string{
		string(AppendNull(nil)):                                  "$-1\r\n",
		string(AppendInt(nil, -1)):                               ":-1\r\n",
		string(AppendInt(nil, 1)):                                ":1\r\n",
		string(AppendSimple(nil, "OK")):                          "+OK\r\n",
		string(AppendError(nil, "ERR x")):                        "-ERR x\r\n",
		string(AppendBulk(nil, nil)):                             "$0\r\n\r\n",
		string(AppendBulkString(nil, "ab")):                      "$2\r\nab\r\n",
		string(AppendArrayHeader(nil, 2)):                        "*2\r\n",
		string(AppendBulk(nil, []byte(strings.Repeat("x", 10)))): "$10\r\nxxxxxxxxxx\r\n",
	}
	for got, want := range checks {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func FuzzParseArray(f *testing.F) {
	f.Add([]byte("*3\r\n$3\r\nset\r\n$7\r\nSETKEY2\r\n$6\r\nVALUE5\r\n"))
	f.Add([]byte("*2\r\n$3\r\nget\r\n$1\r\n\x00\r\n"))
	f.Add([]byte("*1\r\n$0\r\n\r\n"))
	f.Add([]byte("*1\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		args, err := ParseArray(in, nil)
		if err != nil {
			return
		}
		// What parses must encode back to exactly the same bytes, except
		// that lengths lose their leading zeros.
		again, err := ParseArray(AppendArray(nil, args...), nil)
		if err != nil || len(again) != len(args) {
			t.Fatalf("re-encoding %q: %q, %v", in, again, err)
		}
		for i := range args {
			if !bytes.Equal(args[i], again[i]) {
				t.Fatalf("element %d: %q != %q", i, args[i], again[i])
			}
		}
	})
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "$4\r\n1234\r\n", "$-1\r\n", ":-1\r\n", "-ERR syntax error\r\n", "_\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseReply(in)
		if err != nil {
			return
		}
		var out []byte
		switch r.Kind {
		case KindSimple:
			out = AppendSimple(nil, string(r.Text))
		case KindError:
			out = AppendError(nil, string(r.Text))
		case KindBulk:
			out = AppendBulk(nil, r.Text)
		case KindInteger:
			out = AppendInt(nil, r.Int)
		case KindArray:
			out = AppendArray(nil, r.Elems...)
		case KindScanPage:
			n := 1
			if r.More {
				n = 2
			}
			out = AppendArray(AppendArrayHeader(nil, n), r.Elems...)
			if r.More {
				out = AppendBulk(out, r.Text)
			}
		case KindNull:
			return
		}
		if r2, err := ParseReply(out); err != nil || r2.Kind != r.Kind || r2.Int != r.Int || !bytes.Equal(r2.Text, r.Text) ||
			len(r2.Elems) != len(r.Elems) || r2.More != r.More {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", in, r, out, r2, err)
		}
	})
}

package wire

import (
	"path"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"*", "", true},
		{"*", "anything/at/all", true},
		{"door/*", "door/1", true},
		{"door/*", "door/1/2", true},
		{"door/*", "window/1", false},
		{"door*", "door", true},
		{"*/1", "door/1", true},
		{"*/1", "door/12", false},
		{"d?or", "door", true},
		{"d?or", "dor", false},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[!e]llo", "hello", false},
		{"h[a-c]llo", "hbllo", true},
		{"h[a-c]llo", "hdllo", false},
		{"h[]]llo", "h]llo", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`a\?`, "a?", true},
		{"[", "[", true},
		{"a[b", "a[b", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"", "", true},
		{"", "x", false},
	} {
		if got := MatchGlob([]byte(tc.pattern), []byte(tc.key)); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

// Where path.Match has no '/' to treat apart, the two agree.
func FuzzMatchGlob(f *testing.F) {
	for _, s := range [][2]string{{"a*b", "axxb"}, {"[a-c]?", "bz"}, {"*x*", "yxy"}, {"[^a]", "b"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, key string) {
		got := MatchGlob([]byte(pattern), []byte(key))
		for i := 0; i < len(pattern); i++ {
			switch pattern[i] {
			case '/', '\\', '[', '^', '!':
				return // path.Match differs on these
			}
		}
		for i := 0; i < len(key); i++ {
			if key[i] == '/' || key[i] >= 0x80 {
				return
			}
		}
		want, err := path.Match(pattern, key)
		if err == nil && got != want {
			t.Fatalf("MatchGlob(%q, %q) = %v, path.Match says %v", pattern, key, got, want)
		}
	})
}

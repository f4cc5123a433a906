package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMatchPattern is the table of SCAN's pattern rules as the vendor's
// clients document them (the protocol's section 11, whose examples come
// first), then the corners the documentation leaves to the server.
func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
	}{
		// The documented examples.
		{"*", "anything", true},
		{"*", "", true},
		{"key*", "key1", true},
		{"key*", "key", true},
		{"key*", "akey1", false},
		{"*key", "mykey", true},
		{"*key", "keys", false},
		{"user:?", "user:1", true},
		{"user:?", "user:12", false},
		{"user:?", "user:", false},
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[a-z]", "q", true},
		{"[a-z]", "Q", false},
		{"[!abc]", "d", true},
		{"[!abc]", "a", false},
		{"[!a-z]", "5", true},
		{"[!a-z]", "m", false},
		{"[*]", "*", true},
		{"[*]", "x", false},
		{"[?]", "?", true},
		{"[?]", "a", false},
		{"a[*]b", "a*b", true},
		// Whole-key, not a prefix and not a regular expression.
		{"key", "key1", false},
		{"key", "key", true},
		{"k.y", "key", false},
		{"k.y", "k.y", true},
		{"^key$", "key", false},
		{"a+", "aa", false},
		// '*' crosses '/', and matches nothing too.
		{"sensor/*", "sensor/a/b", true},
		{"sensor/*", "sensor/", true},
		{"sensor/*", "sensor", false},
		{"*/temp", "a/b/temp", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"**", "x", true},
		{"a**b", "ab", true},
		// '?' is one character, not one byte.
		{"?", "ü", true},
		{"?", "日", true},
		{"??", "日", false},
		{"caf?", "café", true},
		{"[ü]", "ü", true},
		{"[a-ü]", "é", true},
		{"[!ü]", "ü", false},
		{"*é", "café", true},
		// Sets: ']' first is a member, '-' first or last is a member.
		{"[]]", "]", true},
		{"[!]]", "]", false},
		{"[!]]", "a", true},
		{"[-a]", "-", true},
		{"[a-]", "-", true},
		{"[a-]", "b", false},
		{"[z-a]", "m", false}, // reversed range
		{"[[]", "[", true},
		{"[!]", "!", false}, // "[!]" is not closed: literal '[', '!', ']'
		{"[!]", "[!]", true},
		// An unclosed '[' is literal; '\' is an ordinary character.
		{"a[b", "a[b", true},
		{"a[b", "ab", false},
		{`a\*`, `a\b`, true},
		{`a\*`, "a*", false},
		{`\`, `\`, true},
		// Binary and non-UTF-8.
		{"*", "\xff", false},
		{"*", "a\xc3", false},
		{"\xff", "\xff", false},
		{"\xff*", "\xffa", false},
		{"a\x00*", "a\x00b", true},
		{"*\r\n", "x\r\n", true},
		{"", "", true},
		{"", "a", false},
	}
	for _, tt := range tests {
		if got := MatchPattern(tt.pattern, tt.key); got != tt.want {
			t.Errorf("MatchPattern(%q, %q) = %v, want %v", tt.pattern, tt.key, got, tt.want)
		}
		if got := MatchPattern([]byte(tt.pattern), []byte(tt.key)); got != tt.want {
			t.Errorf("MatchPattern([]byte %q, %q) = %v, want %v", tt.pattern, tt.key, got, tt.want)
		}
	}
}

func TestPatternPrefix(t *testing.T) {
	for pattern, want := range map[string]string{
		"sensor/*": "sensor/", "*": "", "a?b": "a", "[ab]c": "", "plain": "plain", "a[b": "a",
	} {
		if got := PatternPrefix(pattern); got != want {
			t.Errorf("PatternPrefix(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func TestPatternSuffix(t *testing.T) {
	for pattern, want := range map[string]string{
		"*/temp": "/temp", "*": "", "a?b": "b", "[ab]c": "c", "plain": "plain", "a[b": "b",
		"a]b": "b", "[]]x": "x", "[!a-z]": "", "sensor/*": "", "*é": "é",
	} {
		if got := PatternSuffix(pattern); got != want {
			t.Errorf("PatternSuffix(%q) = %q, want %q", pattern, got, want)
		}
	}
}

// FuzzMatchPattern checks that matching terminates, never matches what is
// not UTF-8, agrees with the literal prefix, and that a pattern without
// wildcards matches itself alone.
func FuzzMatchPattern(f *testing.F) {
	f.Add("user:?", "user:1")
	f.Add("[!a-z]*", "Zebra")
	f.Add("*a*b*c*d*", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabcd")
	f.Add("[]]", "]")
	f.Add("caf?", "café")
	f.Fuzz(func(t *testing.T, pattern, key string) {
		got := MatchPattern(pattern, key)
		if got && (!utf8.ValidString(pattern) || !utf8.ValidString(key)) {
			t.Fatalf("%q matched %q, not both UTF-8", pattern, key)
		}
		if got && !strings.HasPrefix(key, PatternPrefix(pattern)) {
			t.Fatalf("%q matched %q without its prefix %q", pattern, key, PatternPrefix(pattern))
		}
		if got && !strings.HasSuffix(key, PatternSuffix(pattern)) {
			t.Fatalf("%q matched %q without its suffix %q", pattern, key, PatternSuffix(pattern))
		}
		// The rest of a pattern after its literal start, or before its
		// literal end, decides the match of the rest of the key alone.
		if utf8.ValidString(pattern) && utf8.ValidString(key) {
			pre, suf := PatternPrefix(pattern), PatternSuffix(pattern)
			byStart := strings.HasPrefix(key, pre) && MatchPattern(pattern[len(pre):], key[len(pre):])
			byEnd := strings.HasSuffix(key, suf) && MatchPattern(pattern[:len(pattern)-len(suf)], key[:len(key)-len(suf)])
			if byStart != got || byEnd != got {
				t.Fatalf("%q against %q: %v, by its literal start %v, by its literal end %v", pattern, key, got, byStart, byEnd)
			}
		}
		if !strings.ContainsAny(pattern, "*?[") && utf8.ValidString(pattern) {
			if MatchPattern(pattern, pattern) != true || (key != pattern && got) {
				t.Fatalf("literal %q against %q: %v", pattern, key, got)
			}
		}
	})
}

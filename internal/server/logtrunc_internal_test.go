package server

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A long string is cut on a character boundary and says its length.
func TestCutKeepsWholeCharacters(t *testing.T) {
	s := "x" + strings.Repeat("€", 400) // 1,201 bytes; € is 3
	got := cut(s)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "… (1201 bytes)") || len(got) > maxLoggedString+20 {
		t.Fatalf("cut: %q", got)
	}
	if short := strings.Repeat("a", maxLoggedString); cut(short) != short {
		t.Fatal("a string of the bound was cut")
	}
}

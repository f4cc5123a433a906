package auth

import "testing"

func TestTopicMatches(t *testing.T) {
	for _, c := range []struct {
		filter, topic string
		want          bool
	}{
		{"a", "a", true},
		{"a", "a/b", false}, // a literal filter grants only itself
		{"a/b", "a", false},
		{"a/#", "a", true}, // '#' includes the parent level
		{"a/#", "a/b/c", true},
		{"a/#", "ab", false},
		{"a/+", "a/b", true},
		{"a/+", "a/b/c", false},
		{"a/+", "a", false},
		{"+", "a", true},
		{"+", "a/b", false},
		{"+/+", "/x", true},
		{"#", "a/b", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"a//b", "a//b", true},
		{"a/+/b", "a//b", true},
	} {
		if got := topicMatches(c.filter, c.topic); got != c.want {
			t.Errorf("topicMatches(%q, %q) = %v, want %v", c.filter, c.topic, got, c.want)
		}
	}
}

func TestFilterCovers(t *testing.T) {
	for _, c := range []struct {
		grant, filter string
		want          bool
	}{
		{"a", "a", true},
		{"a", "a/b", false},
		{"a", "a/#", false},
		{"a", "+", false},
		{"a", "#", false},
		{"a/#", "a", true},
		{"a/#", "a/#", true},
		{"a/#", "a/b/+", true},
		{"a/#", "+/b", false},
		{"a/+", "a/b", true},
		{"a/+", "a/+", true},
		{"a/+", "a/#", false},
		{"a/+", "a", false},
		{"a/+", "a/b/c", false},
		{"a/b", "a/+", false},
		{"a/b", "+/b", false},
		{"+/b", "a/b", true},
		{"+/b", "+/b", true},
		{"#", "#", true},
		{"#", "a/+/c", true},
		{"#", "$SYS/#", false},
		{"+/#", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
	} {
		if got := filterCovers(c.grant, c.filter); got != c.want {
			t.Errorf("filterCovers(%q, %q) = %v, want %v", c.grant, c.filter, got, c.want)
		}
	}
}

func TestValidFilter(t *testing.T) {
	for f, want := range map[string]bool{
		"a": true, "a/+/b": true, "a/#": true, "#": true, "+": true, "/": true,
		"": false, "a/#/b": false, "a+": false, "a/b#": false, "#/a": false,
	} {
		if got := validFilter(f); got != want {
			t.Errorf("validFilter(%q) = %v, want %v", f, got, want)
		}
	}
}

func TestGlobMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything/at:all", true},
		{"app/*", "app/", true},
		{"app/*", "app/x/y", true},
		{"app/*", "ap", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"key[0-9]", "key7", true},
		{"key[0-9]", "keyx", false},
		{"key[^0-9]", "keyx", true},
		{"key[!0-9]", "key1", false},
		{"[abc]", "b", true},
		{"[]]", "]", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"*x*y*", "axbyc", true},
		{"*x*y*", "ayxb", false},
		{"a[", "a[", true},
		{"lock", "lock", true},
		{"lock", "locks", false},
		// As Redis: a reversed range is the same range, and a '\' that
		// ends the pattern is itself.
		{"key[z-a]", "keym", true},
		{"key[z-a]", "key0", false},
		{`a\`, `a\`, true},
		{`a\`, "a", false},
	} {
		if got := globMatches(c.pattern, []byte(c.name)); got != c.want {
			t.Errorf("globMatches(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	// A quoted value matches only itself.
	for _, v := range []string{"*", "a?b", "[x]", `back\slash`} {
		q := globQuote(v)
		if !globMatches(q, []byte(v)) || globMatches(q, []byte(v+"x")) || (v == "*" && globMatches(q, []byte("y"))) {
			t.Errorf("globQuote(%q) = %q does not match exactly itself", v, q)
		}
	}
}

func TestStarMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"line-1-*", "line-1-a", true},
		{"line-1-*", "line-1-", true},
		{"line-1-*", "line-2-a", false},
		{"*", "x", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"a?", "ab", false}, // only '*' is special
		{"a?", "a?", true},
	} {
		if got := starMatches(c.pattern, c.s); got != c.want {
			t.Errorf("starMatches(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func TestMatchersDoNotAllocate(t *testing.T) {
	key := []byte("app/alice/settings/7")
	n := testing.AllocsPerRun(100, func() {
		topicMatches("telemetry/+/#", "telemetry/line-1/temp")
		filterCovers("telemetry/#", "telemetry/+/temp")
		globMatches("app/alice/*/[0-9]", key)
	})
	if n != 0 {
		t.Fatalf("%v allocations per match, want 0", n)
	}
}

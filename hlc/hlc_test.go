package hlc

import (
	"strconv"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Timestamp
		bad  bool
	}{
		{in: "1696374425000:1:StateStore", want: Timestamp{1696374425000, 1, "StateStore"}},
		{in: "001696374425000:00001:CLIENT", want: Timestamp{1696374425000, 1, "CLIENT"}},
		{in: "0:0:", want: Timestamp{}},
		{in: "5:7:node:with:colons", want: Timestamp{5, 7, "node:with:colons"}},
		{in: "5:4294967295:n", want: Timestamp{5, 4294967295, "n"}},
		{in: "", bad: true},
		{in: "5", bad: true},
		{in: "5:6", bad: true},
		{in: ":6:n", bad: true},
		{in: "5::n", bad: true},
		{in: "+5:6:n", bad: true},
		{in: "-5:6:n", bad: true},
		{in: "5:-6:n", bad: true},
		{in: " 5:6:n", bad: true},
		{in: "5:4294967296:n", bad: true},
		{in: "9223372036854775808:0:n", bad: true},
		{in: "1.5:0:n", bad: true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestStringPadsLikeTheVendorClients(t *testing.T) {
	ts := Timestamp{Wall: 1696374425000, Counter: 1, Node: "StateStore"}
	if got, want := ts.String(), "001696374425000:00001:StateStore"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	big := Timestamp{Wall: 1234567890123456789, Counter: 1234567, Node: "n"}
	if got, want := big.String(), "1234567890123456789:1234567:n"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	back, err := Parse(big.String())
	if err != nil || back != big {
		t.Fatalf("round trip: %v, %v", back, err)
	}
}

func TestCompare(t *testing.T) {
	ordered := []Timestamp{
		{},
		{Wall: 1, Counter: 0, Node: "b"},
		{Wall: 1, Counter: 1, Node: "a"},
		{Wall: 1, Counter: 1, Node: "b"},
		{Wall: 2, Counter: 0, Node: ""},
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := ordered[i].Compare(ordered[j]); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

type fakeTime struct{ ms int64 }

func (f *fakeTime) now() time.Time { return time.UnixMilli(f.ms) }

func TestClockIsStrictlyIncreasing(t *testing.T) {
	ft := &fakeTime{ms: 1000}
	c := NewClock("s", ft.now)
	prev := c.Now()
	if prev != (Timestamp{1000, 0, "s"}) {
		t.Fatalf("first reading %v", prev)
	}
	for i := 0; i < 100; i++ {
		if i == 50 {
			ft.ms = 500 // the wall clock goes backwards
		}
		next := c.Now()
		if !prev.Before(next) {
			t.Fatalf("reading %d: %v not after %v", i, next, prev)
		}
		prev = next
	}
	ft.ms = 2000
	if got := c.Now(); got != (Timestamp{2000, 0, "s"}) {
		t.Fatalf("after the clock moved on: %v", got)
	}
}

func TestClockUpdateExceedsRemote(t *testing.T) {
	ft := &fakeTime{ms: 1000}
	c := NewClock("s", ft.now)
	cases := []Timestamp{
		{Wall: 900, Counter: 7, Node: "client"},  // behind: the server clock wins
		{Wall: 1000, Counter: 3, Node: "zzzz"},   // same millisecond
		{Wall: 5000, Counter: 9, Node: "client"}, // ahead
		{Wall: 5000, Counter: 9, Node: "client"}, // the same again
		{Wall: 5000, Counter: 4294967295, Node: "x"},
	}
	last := Timestamp{}
	for _, remote := range cases {
		got := c.Update(remote)
		if !remote.Before(got) || !last.Before(got) {
			t.Fatalf("Update(%v) = %v; must exceed it and %v", remote, got, last)
		}
		last = got
	}
	if got := c.Update(Timestamp{Wall: 900}); got.Wall != 5001 {
		t.Fatalf("counter overflow must borrow the next millisecond: %v", got)
	}
}

func TestClockUpdateAtUsesTheGivenReading(t *testing.T) {
	ft := &fakeTime{ms: 1000}
	c := NewClock("s", ft.now)
	if got := c.UpdateAt(Timestamp{}, 7000); got.Wall != 7000 || got.Counter != 0 {
		t.Fatalf("UpdateAt(zero, 7000) = %v, want wall 7000 counter 0", got)
	}
	// A reading behind what the clock issued does not take it back.
	if got := c.UpdateAt(Timestamp{}, 2000); got.Wall != 7000 || got.Counter != 1 {
		t.Fatalf("UpdateAt(zero, 2000) = %v, want 7000:1", got)
	}
}

func TestClockObserveSurvivesAClockSetBack(t *testing.T) {
	ft := &fakeTime{ms: 10_000}
	before := NewClock("s", ft.now)
	issued := before.Update(Timestamp{Wall: 10_050, Counter: 2, Node: "c"})
	ft.ms = 1_000 // restarted with the clock set back
	after := NewClock("s", ft.now)
	after.Observe(issued)
	if next := after.Now(); !issued.Before(next) {
		t.Fatalf("after restart %v is not after %v", next, issued)
	}
}

func TestAheadBy(t *testing.T) {
	ft := &fakeTime{ms: 100_000}
	c := NewClock("s", ft.now)
	if c.AheadBy(Timestamp{Wall: 160_000}, time.Minute) {
		t.Fatal("exactly one minute ahead is allowed")
	}
	if !c.AheadBy(Timestamp{Wall: 160_001}, time.Minute) {
		t.Fatal("more than one minute ahead is refused")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1696374425000:1:StateStore", "0:0:", "1:2:3:4", "x", "99999999999999999999:0:n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(ts.String())
		if err != nil || back != ts {
			t.Fatalf("%q parsed as %v, which prints as %q and parses back as %v, %v", s, ts, ts.String(), back, err)
		}
	})
}

// TestACounterThatWouldOverflowItsFieldMovesTheTimeForward: a remote
// counter at the five-digit limit (or past it) must not produce a version
// whose counter is wider than the text format's five digits.
func TestACounterThatWouldOverflowItsFieldMovesTheTimeForward(t *testing.T) {
	for _, counter := range []uint32{65535, 99998, 99999, 100000, 4294967295} {
		c := NewClock("n", func() time.Time { return time.UnixMilli(1000) })
		remote := Timestamp{Wall: 5000, Counter: counter, Node: "client"}
		got := c.Update(remote)
		if !got.After(remote) {
			t.Fatalf("counter %d: %v is not after %v", counter, got, remote)
		}
		if got.Counter > MaxCounter {
			t.Fatalf("counter %d: issued counter %d is wider than five digits", counter, got.Counter)
		}
		if text := got.String(); len(text) != 15+1+5+1+len("n") {
			t.Fatalf("counter %d: %q is not %%015d:%%05d:n", counter, text)
		}
		want := Timestamp{Wall: 5000, Counter: counter + 1, Node: "n"}
		if counter >= MaxCounter {
			want = Timestamp{Wall: 5001, Counter: 0, Node: "n"}
		}
		if got != want {
			t.Fatalf("counter %d: got %v, want %v", counter, got, want)
		}
		if next := c.Now(); !next.After(got) || next.Counter > MaxCounter {
			t.Fatalf("counter %d: the next reading %v", counter, next)
		}
	}
	// Locally issued readings within one millisecond roll over too.
	c := NewClock("n", func() time.Time { return time.UnixMilli(1000) })
	c.Observe(Timestamp{Wall: 1000, Counter: MaxCounter})
	if got := c.Now(); got != (Timestamp{Wall: 1001, Counter: 0, Node: "n"}) {
		t.Fatalf("after counter %d: %v", MaxCounter, got)
	}
}

// TestParseDigitsAgreesWithParseUint: the digits are read by hand, and
// must give what strconv does at each width's edges.
func TestParseDigitsAgreesWithParseUint(t *testing.T) {
	cases := []string{"0", "9", "00000000000000000000000000042", "4294967295", "4294967296",
		"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
		"1152921504606846975", "1152921504606846976", "11529215046068469760", "99999999999999999999"}
	for _, s := range cases {
		for _, bits := range []int{32, 63} {
			want, err := strconv.ParseUint(s, 10, bits)
			got, ok := parseDigits(s, bits)
			if ok != (err == nil) || got != want && ok {
				t.Errorf("parseDigits(%q, %d) = %d, %v; ParseUint gives %d, %v", s, bits, got, ok, want, err)
			}
		}
	}
	for _, s := range []string{"", "+1", "-1", " 1", "1 ", "1a", "١"} {
		if _, ok := parseDigits(s, 63); ok {
			t.Errorf("parseDigits(%q) accepted", s)
		}
	}
}

func FuzzParseDigits(f *testing.F) {
	for _, s := range []string{"0", "4294967296", "9223372036854775808", "1152921504606846976", "+1", "00001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, bits := range []int{32, 63} {
			want, err := strconv.ParseUint(s, 10, bits)
			got, ok := parseDigits(s, bits)
			if ok != (err == nil) || ok && got != want {
				t.Fatalf("parseDigits(%q, %d) = %d, %v; ParseUint gives %d, %v", s, bits, got, ok, want, err)
			}
		}
	})
}

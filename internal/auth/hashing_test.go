package auth

import (
	"testing"
	"time"
)

// Logins waiting for a hashing slot get it clean ones first, then those
// of addresses that failed, each in the order they came.
func TestHashSlotsServeCleanAddressesFirst(t *testing.T) {
	h := newHashSlots(1)
	h.acquire(false) // the slot is taken
	order := make(chan string, 4)
	wait := func(name string, suspect bool, before int) {
		go func() {
			h.acquire(suspect)
			order <- name
			h.release()
		}()
		for h.waiters() != before+1 {
			time.Sleep(time.Millisecond)
		}
	}
	wait("suspect-1", true, 0)
	wait("suspect-2", true, 1)
	wait("clean-1", false, 2)
	wait("clean-2", false, 3)
	h.release()
	for _, want := range []string{"clean-1", "clean-2", "suspect-1", "suspect-2"} {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("%s got the slot, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never got the slot", want)
		}
	}
}

// Failures are counted by address, and an IPv6 address by its /64.
func TestFailuresAreCountedByIPv4AddressAndIPv6Network(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"10.0.0.1:1000", "10.0.0.1:2000"},
		{"[2001:db8:1:2::1]:1000", "[2001:db8:1:2:ffff::9]:3000"},
	} {
		if remoteHost(c.a) != remoteHost(c.b) {
			t.Errorf("%s and %s count apart (%s, %s)", c.a, c.b, remoteHost(c.a), remoteHost(c.b))
		}
	}
	for _, c := range []struct{ a, b string }{
		{"10.0.0.1:1000", "10.0.0.2:1000"},
		{"[2001:db8:1:2::1]:1000", "[2001:db8:1:3::1]:1000"},
	} {
		if remoteHost(c.a) == remoteHost(c.b) {
			t.Errorf("%s and %s count as one (%s)", c.a, c.b, remoteHost(c.a))
		}
	}
}

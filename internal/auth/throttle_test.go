package auth

import (
	"context"
	"testing"
	"time"
)

func TestThrottleDelaysFailuresAndTakesAnAddressOneAtATime(t *testing.T) {
	th := NewThrottle(20*time.Millisecond, 80*time.Millisecond)
	ctx := context.Background()
	fail := func(remote string) time.Duration {
		start := time.Now()
		done, err := th.Admit(ctx, remote)
		if err != nil {
			t.Fatal(err)
		}
		done(true)
		return time.Since(start)
	}
	// The delays double from Base up to Max.
	for i, min := range []time.Duration{20, 40, 80, 80} {
		if d := fail("10.0.0.1:1000"); d < min*time.Millisecond {
			t.Fatalf("failure %d answered after %v, want at least %v", i+1, d, min*time.Millisecond)
		}
	}
	if n := th.Failures("10.0.0.1:2000"); n != 4 {
		t.Fatalf("failures of the address %d, want 4 (counted by address, not port)", n)
	}
	if n := th.Failures("10.0.0.2:1000"); n != 0 {
		t.Fatalf("another address has %d failures", n)
	}
	// While a login of the address is being checked, the next waits.
	done, _ := th.Admit(ctx, "10.0.0.1:3000")
	admitted := make(chan struct{})
	go func() {
		d, _ := th.Admit(ctx, "10.0.0.1:3001")
		close(admitted)
		d(false)
	}()
	// A login that rightly waits gives no sign to wait for: the window
	// lets one admitted too early show.
	select {
	case <-admitted:
		t.Fatal("a second login of a failing address was admitted while the first was checked")
	case <-time.After(20 * time.Millisecond):
	}
	done(false) // a success clears the address
	select {
	case <-admitted:
	case <-time.After(10 * time.Second):
		t.Fatal("the second login was not admitted after the first one's success")
	}
	if n := th.Failures("10.0.0.1:1"); n != 0 {
		t.Fatalf("failures after a success: %d", n)
	}
	// The wait ends with the context.
	fail("10.0.0.3:1")
	hold, _ := th.Admit(ctx, "10.0.0.3:1")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := th.Admit(cctx, "10.0.0.3:2"); err == nil {
		t.Fatal("Admit with a cancelled context waiting for the address's turn returned no error")
	}
	hold(false)
}

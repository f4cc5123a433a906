package store

import "testing"

// refused checks that c is refused for the quota and changes nothing.
func refusedForQuota(t *testing.T, m *Machine, c *Command) {
	t.Helper()
	keys, bytes, seq := m.Len(), m.DataBytes(), m.Seq()
	res, changes := apply(t, m, c)
	if res.Outcome != Refused || res.Err != ErrQuotaExceeded || len(changes) != 0 {
		t.Fatalf("%s %s: %+v with %d changes, want refused for the quota", c.Op, c.Key, res, len(changes))
	}
	if m.Len() != keys || m.DataBytes() != bytes || m.Seq() != seq {
		t.Fatalf("a refused command changed the machine: keys %d→%d, bytes %d→%d, seq %d→%d",
			keys, m.Len(), bytes, m.DataBytes(), seq, m.Seq())
	}
}

func TestTheKeyQuotaRefusesTheKeyOnePastIt(t *testing.T) {
	m := New()
	m.SetLimits(Limits{MaxKeys: 2})
	apply(t, m, set("a", "1", v(1, 0)))
	apply(t, m, set("b", "2", v(2, 0)))
	refusedForQuota(t, m, set("c", "3", v(3, 0)))
	// Replacing a stored key adds none: allowed at the limit.
	if res, _ := apply(t, m, set("a", "longer", v(4, 0))); res.Outcome != Applied {
		t.Fatalf("overwrite at the limit: %+v", res)
	}
	// A DEL always works, and makes room.
	if res, _ := apply(t, m, &Command{Op: OpDel, Key: []byte("b"), Time: 5, Version: v(5, 0)}); res.Outcome != Applied {
		t.Fatalf("DEL at the limit: %+v", res)
	}
	if res, _ := apply(t, m, set("c", "3", v(6, 0))); res.Outcome != Applied {
		t.Fatalf("SET after a DEL made room: %+v", res)
	}
	if val, _, ok := m.Get([]byte("a"), 6); !ok || string(val) != "longer" {
		t.Fatalf("a: %q %v", val, ok)
	}
}

func TestTheByteQuotaCountsKeysAndValues(t *testing.T) {
	m := New()
	m.SetLimits(Limits{MaxBytes: 10})
	apply(t, m, set("k1", "123456", v(1, 0)))               // 8 bytes
	refusedForQuota(t, m, set("k2", "1", v(2, 0)))          // 11
	refusedForQuota(t, m, set("k1", "1234567890", v(3, 0))) // 12
	if res, _ := apply(t, m, set("k1", "12345678", v(4, 0))); res.Outcome != Applied || m.DataBytes() != 10 {
		t.Fatalf("a SET up to the limit exactly: %+v, %d bytes", res, m.DataBytes())
	}
	// Past the limit (it was lowered): shrinking is allowed, growing is not.
	m.SetLimits(Limits{MaxBytes: 4})
	if res, _ := apply(t, m, set("k1", "1234", v(5, 0))); res.Outcome != Applied {
		t.Fatalf("a SET that shrinks a store past its limit: %+v", res)
	}
	refusedForQuota(t, m, set("k1", "12345", v(6, 0)))
	if res, _ := apply(t, m, &Command{Op: OpVDel, Key: []byte("k1"), Value: []byte("1234"), Time: 7, Version: v(7, 0)}); res.Outcome != Applied || m.DataBytes() != 0 {
		t.Fatalf("VDEL past the limit: %+v", res)
	}
}

func TestAConditionNotMetIsAnsweredBeforeTheQuota(t *testing.T) {
	m := New()
	m.SetLimits(Limits{MaxKeys: 1})
	apply(t, m, set("a", "1", v(1, 0)))
	c := set("a", "2", v(2, 0))
	c.Cond = IfMissing
	if res, _ := apply(t, m, c); res.Outcome != NotMet {
		t.Fatalf("NX on a stored key at the limit: %+v", res)
	}
}

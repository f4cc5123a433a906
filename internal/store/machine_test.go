package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dssio/dss/hlc"
)

func v(wall int64, counter uint32) hlc.Timestamp {
	return hlc.Timestamp{Wall: wall, Counter: counter, Node: "n"}
}

func set(key, value string, version hlc.Timestamp) *Command {
	return &Command{Op: OpSet, Key: []byte(key), Value: []byte(value), Time: version.Wall, Version: version}
}

func apply(t *testing.T, m *Machine, c *Command) (Result, []Change) {
	t.Helper()
	return m.Apply(c, nil)
}

func TestSetGet(t *testing.T) {
	m := New()
	res, changes := apply(t, m, set("k", "v1", v(100, 1)))
	if res.Outcome != Applied || res.Version != v(100, 1) {
		t.Fatalf("SET: %+v", res)
	}
	if len(changes) != 1 || changes[0].Key != "k" || string(changes[0].Value) != "v1" || changes[0].Deleted || changes[0].Version != v(100, 1) {
		t.Fatalf("SET changes: %+v", changes)
	}
	val, ver, ok := m.Get([]byte("k"), 100)
	if !ok || string(val) != "v1" || ver != v(100, 1) {
		t.Fatalf("GET: %q %v %v", val, ver, ok)
	}
	if _, _, ok := m.Get([]byte("other"), 100); ok {
		t.Fatal("GET of a missing key found something")
	}
	if m.Len() != 1 || m.DataBytes() != 3 {
		t.Fatalf("Len %d DataBytes %d", m.Len(), m.DataBytes())
	}
}

func TestSetConditions(t *testing.T) {
	m := New()
	apply(t, m, set("k", "v1", v(100, 0)))

	nx := set("k", "v2", v(101, 0))
	nx.Cond = IfMissing
	if res, ch := apply(t, m, nx); res.Outcome != NotMet || res.Version != v(100, 0) || len(ch) != 0 {
		t.Fatalf("NX on existing key: %+v %+v", res, ch)
	}
	nex := set("k", "v2", v(102, 0))
	nex.Cond = IfMissingOrEqual
	if res, _ := apply(t, m, nex); res.Outcome != NotMet || res.Version != v(100, 0) {
		t.Fatalf("NEX with another value: %+v", res)
	}
	nex = set("k", "v1", v(103, 0))
	nex.Cond = IfMissingOrEqual
	if res, ch := apply(t, m, nex); res.Outcome != Applied || res.Version != v(103, 0) || len(ch) != 1 {
		t.Fatalf("NEX with the same value: %+v %+v", res, ch)
	}
	nx = set("new", "x", v(104, 0))
	nx.Cond = IfMissing
	if res, _ := apply(t, m, nx); res.Outcome != Applied {
		t.Fatalf("NX on a missing key: %+v", res)
	}
	if val, _, _ := m.Get([]byte("k"), 104); string(val) != "v1" {
		t.Fatalf("value changed by a refused SET: %q", val)
	}
}

func TestDelAndVDel(t *testing.T) {
	m := New()
	apply(t, m, set("k", "v", v(100, 0)))
	vdel := &Command{Op: OpVDel, Key: []byte("k"), Value: []byte("other"), Time: 101, Version: v(101, 0)}
	if res, ch := apply(t, m, vdel); res.Outcome != NotMet || res.Version != v(100, 0) || len(ch) != 0 {
		t.Fatalf("VDEL mismatch: %+v %+v", res, ch)
	}
	vdel = &Command{Op: OpVDel, Key: []byte("k"), Value: []byte("v"), Time: 102, Version: v(102, 0)}
	res, ch := apply(t, m, vdel)
	if res.Outcome != Applied || res.Version != v(100, 0) {
		t.Fatalf("VDEL match must report the deleted version: %+v", res)
	}
	if len(ch) != 1 || !ch[0].Deleted || ch[0].Version != v(102, 0) {
		t.Fatalf("VDEL change: %+v", ch)
	}
	if res, _ := apply(t, m, vdel); res.Outcome != Missing || !res.Version.IsZero() {
		t.Fatalf("VDEL of a missing key: %+v", res)
	}
	apply(t, m, set("k", "v", v(103, 0)))
	del := &Command{Op: OpDel, Key: []byte("k"), Time: 104, Version: v(104, 0)}
	if res, _ := apply(t, m, del); res.Outcome != Applied || res.Version != v(103, 0) {
		t.Fatalf("DEL: %+v", res)
	}
	if res, _ := apply(t, m, del); res.Outcome != Missing {
		t.Fatalf("DEL of a missing key: %+v", res)
	}
	if m.Len() != 0 || m.DataBytes() != 0 {
		t.Fatalf("Len %d DataBytes %d after deleting everything", m.Len(), m.DataBytes())
	}
}

func TestFencing(t *testing.T) {
	m := New()
	token := v(50, 1)
	c := set("p", "a", v(100, 0))
	c.Fence, c.HasFence = token, true
	if res, _ := apply(t, m, c); res.Outcome != Applied {
		t.Fatalf("SET with a token on a new key: %+v", res)
	}
	if res, _ := apply(t, m, set("p", "b", v(101, 0))); res.Err != ErrFencingRequired {
		t.Fatalf("SET without a token: %+v", res)
	}
	older := set("p", "b", v(102, 0))
	older.Fence, older.HasFence = v(50, 0), true
	if res, _ := apply(t, m, older); res.Err != ErrFencingLower {
		t.Fatalf("SET with an older token: %+v", res)
	}
	equal := set("p", "c", v(103, 0))
	equal.Fence, equal.HasFence = token, true
	if res, _ := apply(t, m, equal); res.Outcome != Applied {
		t.Fatalf("SET with the same token: %+v", res)
	}
	newer := set("p", "d", v(104, 0))
	newer.Fence, newer.HasFence = v(60, 0), true
	if res, _ := apply(t, m, newer); res.Outcome != Applied {
		t.Fatalf("SET with a newer token: %+v", res)
	}
	// The newer token is stored: the old one no longer passes.
	equal.Version = v(105, 0)
	if res, _ := apply(t, m, equal); res.Err != ErrFencingLower {
		t.Fatalf("SET with the replaced token: %+v", res)
	}
	del := &Command{Op: OpDel, Key: []byte("p"), Time: 106, Version: v(106, 0)}
	if res, _ := apply(t, m, del); res.Err != ErrFencingRequired {
		t.Fatalf("DEL without a token: %+v", res)
	}
	vdel := &Command{Op: OpVDel, Key: []byte("p"), Value: []byte("d"), Time: 107, Version: v(107, 0), Fence: v(50, 1), HasFence: true}
	if res, _ := apply(t, m, vdel); res.Err != ErrFencingLower {
		t.Fatalf("VDEL with an older token: %+v", res)
	}
	del.Fence, del.HasFence = v(60, 0), true
	if res, _ := apply(t, m, del); res.Outcome != Applied {
		t.Fatalf("DEL with the token: %+v", res)
	}
	// The token went with the key.
	if res, _ := apply(t, m, set("p", "e", v(108, 0))); res.Outcome != Applied {
		t.Fatalf("SET after the protected key was deleted: %+v", res)
	}
	// A SET without a token on an unprotected key leaves it unprotected.
	if res, _ := apply(t, m, set("p", "f", v(109, 0))); res.Outcome != Applied {
		t.Fatalf("second SET without a token: %+v", res)
	}
}

func TestExpiry(t *testing.T) {
	m := New()
	c := set("k", "v", v(1000, 0))
	c.ExpiresAt = 1500
	apply(t, m, c)
	if _, _, ok := m.Get([]byte("k"), 1499); !ok {
		t.Fatal("missing before its deadline")
	}
	if _, _, ok := m.Get([]byte("k"), 1500); ok {
		t.Fatal("present at its deadline")
	}
	if !m.Expired([]byte("k"), 1500) || m.Expired([]byte("k"), 1499) {
		t.Fatal("Expired disagrees with Get")
	}
	if d, ok := m.NextDeadline(); !ok || d != 1500 {
		t.Fatalf("NextDeadline = %d, %v", d, ok)
	}
	if got := m.AppendExpired(nil, 1499, 10); len(got) != 0 {
		t.Fatalf("AppendExpired before the deadline: %q", got)
	}
	if got := m.AppendExpired(nil, 1500, 10); len(got) != 1 || got[0] != "k" {
		t.Fatalf("AppendExpired at the deadline: %q", got)
	}
	exp := &Command{Op: OpExpire, Key: []byte("k"), Time: 1500, Version: v(1500, 0)}
	res, ch := apply(t, m, exp)
	if len(ch) != 1 || !ch[0].Deleted || ch[0].Version != v(1500, 0) {
		t.Fatalf("expiry change: %+v %+v", res, ch)
	}
	if m.Len() != 0 {
		t.Fatal("expired key still stored")
	}
	if _, ok := m.NextDeadline(); ok {
		t.Fatal("deadline left behind")
	}
}

func TestExpireOfALiveKeyDoesNothing(t *testing.T) {
	m := New()
	c := set("k", "v", v(1000, 0))
	c.ExpiresAt = 1500
	apply(t, m, c)
	// Renewed before the expiry command arrived.
	c = set("k", "v", v(1400, 0))
	c.ExpiresAt = 3000
	apply(t, m, c)
	if res, ch := apply(t, m, &Command{Op: OpExpire, Key: []byte("k"), Time: 1600, Version: v(1600, 0)}); len(ch) != 0 || res.Outcome == Applied {
		t.Fatalf("expired a renewed key: %+v %+v", res, ch)
	}
	// A SET without PX removes the deadline.
	apply(t, m, set("k", "v", v(1700, 0)))
	if _, ok := m.NextDeadline(); ok {
		t.Fatal("SET without PX kept the deadline")
	}
	if _, _, ok := m.Get([]byte("k"), 1<<40); !ok {
		t.Fatal("key without deadline expired")
	}
}

func TestCommandOnExpiredKeyAnnouncesTheExpiry(t *testing.T) {
	m := New()
	c := set("k", "v", v(1000, 0))
	c.ExpiresAt = 1500
	c.Fence, c.HasFence = v(1, 0), true
	apply(t, m, c)
	nx := set("k", "w", v(2000, 0))
	nx.Cond = IfMissing
	res, ch := apply(t, m, nx)
	if res.Outcome != Applied {
		t.Fatalf("NX on an expired key must apply (and the token went with it): %+v", res)
	}
	if len(ch) != 2 || !ch[0].Deleted || ch[1].Deleted {
		t.Fatalf("changes: %+v", ch)
	}
}

func TestMaxVersion(t *testing.T) {
	m := New()
	apply(t, m, set("a", "1", v(300, 0)))
	apply(t, m, set("b", "1", v(200, 0)))
	if m.MaxVersion() != v(300, 0) {
		t.Fatalf("MaxVersion = %v", m.MaxVersion())
	}
}

// TestDeterminism applies one random command sequence to two machines and
// compares them: the machine must depend on nothing but its commands.
func TestDeterminism(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	cmds := randomCommands(r, 5000, 50)
	a, b := New(), New()
	var ra, rb []Result
	for _, c := range cmds {
		x, _ := a.Apply(c, nil)
		y, _ := b.Apply(c, nil)
		ra, rb = append(ra, x), append(rb, y)
	}
	for i := range ra {
		if ra[i] != rb[i] {
			t.Fatalf("command %d: %+v != %+v", i, ra[i], rb[i])
		}
	}
	if !sameState(a, b) {
		t.Fatal("same commands, different states")
	}
}

// randomCommands returns n commands of every kind on keys k0 to k<keys-1>.
func randomCommands(r *rand.Rand, n, keys int) []*Command {
	var cmds []*Command
	now := int64(1000)
	for i := 0; i < n; i++ {
		now += int64(r.IntN(20))
		c := &Command{
			Key:     []byte(fmt.Sprintf("k%d", r.IntN(keys))),
			Value:   []byte(fmt.Sprintf("v%d", r.IntN(4))),
			Time:    now,
			Version: v(now, uint32(i)),
		}
		switch r.IntN(5) {
		case 0, 1:
			c.Op = OpSet
			c.Cond = Condition(r.IntN(3))
			if r.IntN(3) == 0 {
				c.ExpiresAt = now + int64(r.IntN(200)+1)
			}
		case 2:
			c.Op = OpDel
		case 3:
			c.Op = OpVDel
		case 4:
			c.Op = OpExpire
		}
		if r.IntN(4) == 0 {
			c.Fence, c.HasFence = v(int64(r.IntN(10)), 0), true
		}
		cmds = append(cmds, c)
	}
	return cmds
}

func sameState(a, b *Machine) bool {
	return a.maxVersion == b.maxVersion && sameKeys(a, b)
}

func TestDeadlineHeapStaysOrdered(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := New()
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("k%d", r.IntN(300))
		switch r.IntN(3) {
		case 0:
			c := set(key, "v", v(1, uint32(i)))
			c.ExpiresAt = int64(r.IntN(10000) + 1)
			c.Time = 0
			m.Apply(c, nil)
		case 1:
			c := set(key, "v", v(1, uint32(i)))
			c.Time = 0
			m.Apply(c, nil)
		case 2:
			m.Apply(&Command{Op: OpDel, Key: []byte(key), Version: v(1, uint32(i))}, nil)
		}
		for j := range m.deadlines {
			if m.deadlines[j].index != j {
				t.Fatalf("entry at %d thinks it is at %d", j, m.deadlines[j].index)
			}
			if j > 0 && m.deadlines[(j-1)/2].at > m.deadlines[j].at {
				t.Fatalf("heap order broken at %d", j)
			}
		}
		if len(m.deadlines) != len(m.deadlineOf) {
			t.Fatalf("%d deadlines in the heap, %d in the index", len(m.deadlines), len(m.deadlineOf))
		}
	}
	// AppendExpired finds exactly the keys due.
	now := int64(5000)
	got := m.AppendExpired(nil, now, 1<<30)
	want := 0
	for _, d := range m.deadlineOf {
		if d.at <= now {
			want++
		}
	}
	if len(got) != want {
		t.Fatalf("AppendExpired found %d keys, want %d", len(got), want)
	}
}

// A command may alias a request buffer that is reused for the next
// request once Apply returns: neither the state nor the changes may keep
// any of it.
func TestApplyKeepsNothingOfTheCommand(t *testing.T) {
	m := New()
	buf := []byte("key|value|holder")
	c := &Command{Op: OpSet, Key: buf[0:3], Value: buf[4:9], Time: 100, Version: v(100, 0), HasFence: true,
		Fence: hlc.Timestamp{Wall: 50, Node: unsafe.String(&buf[10], 6)}}
	_, changes := apply(t, m, c)
	copy(buf, "KEY|VALUE|HOLDER")
	if len(changes) != 1 {
		t.Fatalf("changes: %+v", changes)
	}
	if ch := changes[0]; ch.Key != "key" || string(ch.Value) != "value" || ch.Fence.Node != "holder" {
		t.Fatalf("the change aliases the command: %+v", ch)
	}
	if val, _, ok := m.Get([]byte("key"), 100); !ok || string(val) != "value" {
		t.Fatalf("GET key = %q, %v", val, ok)
	}
	// The stored token is intact: the holder's token passes, a lower one
	// of the same holder does not.
	renew := set("key", "v2", v(101, 0))
	renew.Fence, renew.HasFence = hlc.Timestamp{Wall: 50, Node: "holder"}, true
	if res, _ := apply(t, m, renew); res.Outcome != Applied {
		t.Fatalf("SET with the stored token: %+v", res)
	}
	for e := range m.Entries() {
		if e.Fence.Node != "holder" {
			t.Fatalf("stored token %+v", e.Fence)
		}
	}
}

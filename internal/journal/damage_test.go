package journal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/store"
)

// asideFiles returns the contents of the files in the directories of dir
// whose names start with prefix (torn-, damaged-).
func asideFiles(t *testing.T, dir, prefix string) [][]byte {
	t.Helper()
	var out [][]byte
	dirs, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
	for _, d := range dirs {
		names, _ := filepath.Glob(filepath.Join(d, "*"))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// damage changes the file name with f.
func damage(t *testing.T, name string, f func(b []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, f(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// headerDamage are the ways a segment's header is damaged in the tests.
var headerDamage = map[string]func(b []byte) []byte{
	"length zeroed":      func(b []byte) []byte { clear(b[:4]); return b },
	"first 4 KiB zeroed": func(b []byte) []byte { clear(b[:min(len(b), 4096)]); return b },
	"checksum flipped":   func(b []byte) []byte { b[5] ^= 0x10; return b },
}

func TestDamagedHeaderOfTheLastSegmentStopsOpen(t *testing.T) {
	for name, f := range headerDamage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			j, m := open(t, dir)
			history(t, j, m, 1, 400)
			j.Close()
			seg := lastSegment(t, dir)
			damage(t, seg, f)
			before, _ := os.ReadFile(seg)
			_, _, err := Open(Options{Dir: dir, Logger: quiet()})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != seg || ce.Offset != 0 {
				t.Fatalf("Open with a damaged header before intact records: %v, want a CorruptError at offset 0 of %s", err, seg)
			}
			if after, _ := os.ReadFile(seg); !bytes.Equal(before, after) {
				t.Fatal("Open changed the damaged segment")
			}
		})
	}
}

func TestSegmentWithoutHeaderOrRecordIsKeptAside(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 50)
	snapshot(t, j, m) // the new segment holds only its header
	j.Close()
	seg := lastSegment(t, dir)
	damage(t, seg, func(b []byte) []byte { return b[:len(b)-3] })
	cut, _ := os.ReadFile(seg)
	j2, m2 := open(t, dir)
	defer j2.Close()
	same(t, m, m2)
	if got := asideFiles(t, dir, "torn-"); len(got) != 1 || !bytes.Equal(got[0], cut) {
		t.Fatalf("the incomplete segment was not kept aside: %q", got)
	}
}

func TestDamagedLastRecordStopsOpen(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 50)
	j.Close()
	seg := lastSegment(t, dir)
	damage(t, seg, func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b })
	_, _, err := Open(Options{Dir: dir, Logger: quiet()})
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Open with a flipped byte in the last record: %v, want a CorruptError", err)
	}
}

// checkRepaired checks the repaired state got against the state want the
// journal held before the damage: every key that the report does not name
// as dropped is there exactly, and nothing else is.
func checkRepaired(t *testing.T, want, got *store.Machine, r *Report) {
	t.Helper()
	dropped := func(k string) bool { return slices.Contains(r.KeysDropped, k) }
	for c := range want.Entries() {
		if dropped(c.Key) {
			continue
		}
		v, version, ok := got.Get([]byte(c.Key), 0)
		if !ok || !bytes.Equal(v, c.Value) || version != c.Version {
			t.Errorf("key %q repaired as %q %v %v, want %q %v", c.Key, v, version, ok, c.Value, c.Version)
		}
	}
	for c := range got.Entries() {
		if _, _, ok := want.Get([]byte(c.Key), 0); !ok && !dropped(c.Key) {
			t.Errorf("key %q is back after the repair and the report does not name it", c.Key)
		}
	}
	if got.MaxVersion().Before(want.MaxVersion()) && len(r.KeysDropped) == 0 && !r.DroppedUnknown {
		t.Errorf("repaired max version %v below %v", got.MaxVersion(), want.MaxVersion())
	}
}

// intactState replays the change records of a segment's bytes seg that
// lie wholly outside the damaged range [lo, hi): the state a repair must
// reach.
func intactState(t *testing.T, seg []byte, lo, hi int64) *store.Machine {
	t.Helper()
	m := store.New()
	replayIntact(t, m, seg, lo, hi)
	return m
}

func replayIntact(t *testing.T, m *store.Machine, seg []byte, lo, hi int64) {
	t.Helper()
	rr := newRecordReader(bytes.NewReader(seg))
	for {
		at := rr.offset
		p, err := rr.next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("the segment before the damage: %v", err)
		}
		var c store.Change
		if rr.offset <= lo || at >= hi {
			if decodeChange(p, nodes{}, &c) == nil {
				m.Replay(&c)
			}
		}
	}
}

// sameKeys checks that got holds exactly the keys of want.
func sameKeys(t *testing.T, want, got *store.Machine) {
	t.Helper()
	if want.Len() != got.Len() {
		t.Errorf("repaired state holds %d keys, want %d", got.Len(), want.Len())
	}
	for c := range want.Entries() {
		v, version, ok := got.Get([]byte(c.Key), 0)
		if !ok || !bytes.Equal(v, c.Value) || version != c.Version {
			t.Errorf("key %q repaired as %q %v %v, want %q %v", c.Key, v, version, ok, c.Value, c.Version)
		}
	}
}

func repair(t *testing.T, dir string) *Report {
	t.Helper()
	r, err := Repair(dir)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	return r
}

func TestRepairKeepsTheRecordsAfterTheDamage(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 400)
	j.Close()
	seg := lastSegment(t, dir)
	orig, _ := os.ReadFile(seg)
	damage(t, seg, func(b []byte) []byte { b[len(b)/2] ^= 0x55; return b })

	r := repair(t, dir)
	if r.RecordsDropped != 1 || r.DroppedUnknown || len(r.Damage) != 1 {
		t.Fatalf("report %+v: want one record dropped in one region", r)
	}
	if r.RecordsKept != int64(m.Seq()-1) { // the changes but one
		t.Fatalf("kept %d records, want %d", r.RecordsKept, m.Seq()-1)
	}
	j2, m2 := open(t, dir)
	checkRepaired(t, m, m2, r)
	sameKeys(t, intactState(t, orig, int64(len(orig)/2), int64(len(orig)/2+1)), m2)
	if m2.Seq() != m.Seq() || m2.MaxVersion().Before(m.MaxVersion()) {
		t.Fatalf("repaired up to change %d, version %v; the journal held %d, %v", m2.Seq(), m2.MaxVersion(), m.Seq(), m.MaxVersion())
	}
	// The original is kept, byte for byte, and the server goes on.
	if got := asideFiles(t, dir, "damaged-"); !slices.ContainsFunc(got, func(b []byte) bool {
		return bytes.Equal(b[:len(b)/2], orig[:len(orig)/2]) && len(b) == len(orig)
	}) {
		t.Fatal("the damaged segment was not kept")
	}
	history(t, j2, m2, 401, 30)
	j2.Close()
	if again := repair(t, dir); len(again.Damage) != 0 || len(again.Actions) != 0 {
		t.Fatalf("a second Repair found %q and did %q", again.Damage, again.Actions)
	}
	j3, m3 := open(t, dir)
	defer j3.Close()
	same(t, m2, m3)
}

func TestRepairOfADamagedSegmentHeader(t *testing.T) {
	for name, f := range headerDamage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			j, m := open(t, dir)
			history(t, j, m, 1, 400)
			j.Close()
			seg := lastSegment(t, dir)
			orig, _ := os.ReadFile(seg)
			damage(t, seg, f)
			r := repair(t, dir)
			j2, m2 := open(t, dir)
			defer j2.Close()
			lo, hi := int64(0), int64(4096)
			if name != "first 4 KiB zeroed" {
				hi = 1
				checkRepaired(t, m, m2, r)
				if r.RecordsDropped != 0 || len(r.KeysDropped) != 0 {
					t.Fatalf("report %+v: only the header was damaged", r)
				}
			}
			want := intactState(t, orig, lo, hi)
			sameKeys(t, want, m2)
			if lost := int64(m.Seq()) - r.RecordsKept; r.RecordsDropped != lost {
				t.Fatalf("report counts %d records dropped; %d of %d changes were kept", r.RecordsDropped, r.RecordsKept, m.Seq())
			}
		})
	}
}

func TestRepairKeepsDeletionsAndVersionsAcrossTheGap(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	set := func(k, v string, wall int64) {
		_, changes := m.Apply(&store.Command{Op: store.OpSet, Key: []byte(k), Value: []byte(v), Version: ver(wall)}, nil)
		j.Append(&changes[0])
		j.Flush()
	}
	set("deleted-later", "old", 1)
	set("victim", strings.Repeat("x", 100), 2) // the record that is damaged
	seg := lastSegment(t, dir)
	info, _ := os.Stat(seg)
	at := info.Size() - 50
	_, changes := m.Apply(&store.Command{Op: store.OpDel, Key: []byte("deleted-later"), Version: ver(3)}, nil)
	j.Append(&changes[0])
	set("after", "v", 4)
	j.Close()
	damage(t, seg, func(b []byte) []byte { b[at] ^= 0x01; return b })

	r := repair(t, dir)
	j2, m2 := open(t, dir)
	defer j2.Close()
	if _, _, ok := m2.Get([]byte("deleted-later"), 0); ok {
		t.Fatal("a key deleted after the damage is back")
	}
	if _, _, ok := m2.Get([]byte("after"), 0); !ok {
		t.Fatal("the change after the damage was lost")
	}
	if !slices.Equal(r.KeysDropped, []string{"victim"}) || r.RecordsDropped != 1 {
		t.Fatalf("report names %q, %d records dropped; want victim, 1", r.KeysDropped, r.RecordsDropped)
	}
	if m2.MaxVersion().Before(ver(4)) {
		t.Fatalf("versions went back to %v", m2.MaxVersion())
	}
}

func TestRepairOfADamagedEndKeepsVersionsAboveIt(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 100)
	j.Close()
	seg := lastSegment(t, dir)
	// Bit rot in the last record: Open refuses it, Repair drops it.
	damage(t, seg, func(b []byte) []byte { b[len(b)-2] ^= 0x01; return b })
	info, _ := os.Stat(seg)
	r := repair(t, dir)
	if !r.DroppedUnknown {
		t.Fatalf("report %+v: the damage reaches the end, so what it held is unknown", r)
	}
	j2, m2 := open(t, dir)
	defer j2.Close()
	checkRepaired(t, m, m2, r)
	if m2.MaxVersion().Wall < info.ModTime().UnixMilli() {
		t.Fatalf("max version %v: below the time %v the damaged segment was last written", m2.MaxVersion(), info.ModTime())
	}
}

func TestRepairOfADamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 300)
	snapshot(t, j, m)
	history(t, j, m, 301, 20)
	j.Close()
	files, _ := listDir(dir)
	name := filepath.Join(dir, snapshotName(files.snapshots[0]))
	orig, _ := os.ReadFile(name)
	seg, _ := os.ReadFile(lastSegment(t, dir))
	at := int64(len(orig) / 2)
	damage(t, name, func(b []byte) []byte { b[at] ^= 0x01; return b })
	r := repair(t, dir)
	if r.RecordsDropped != 1 || r.DroppedUnknown {
		t.Fatalf("report %+v: the footer counts one key more than the snapshot holds", r)
	}
	j2, m2 := open(t, dir)
	defer j2.Close()
	want := store.New()
	replayIntact(t, want, orig, at, at+1)
	replayIntact(t, want, seg, 0, 0)
	sameKeys(t, want, m2)
}

func TestRepairLeavesAnIntactDirectoryAlone(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 50)
	snapshot(t, j, m)
	history(t, j, m, 51, 50)
	j.Close()
	r := repair(t, dir)
	if len(r.Actions) != 0 || len(r.Damage) != 0 {
		t.Fatalf("Repair of an intact directory: %+v", r)
	}
	if dirs, _ := filepath.Glob(filepath.Join(dir, "damaged-*")); len(dirs) != 0 {
		t.Fatalf("Repair of an intact directory made %q", dirs)
	}
}

func TestRepairOfADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	j, _ := open(t, dir)
	defer j.Close()
	if _, err := Repair(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair of a directory in use: %v", err)
	}
}

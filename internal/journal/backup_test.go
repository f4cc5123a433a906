package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/store"
)

// backupOf writes a backup of m the way the engine does: keys, then a few
// changes made after the keys were copied.
func backupOf(t *testing.T, m *store.Machine) []byte {
	t.Helper()
	var out bytes.Buffer
	w := NewBackupWriter(&out)
	if err := w.Begin(m.Seq(), m.MaxVersion()); err != nil {
		t.Fatal(err)
	}
	entries := slices.Collect(m.Entries())
	if err := w.Keys(entries[:len(entries)/2]); err != nil {
		t.Fatal(err)
	}
	// A change while the copy runs: a key deleted, another set.
	var changes []store.Change
	_, changes = m.Apply(&store.Command{Op: store.OpDel, Key: []byte(entries[0].Key), Version: ver(100000)}, changes)
	_, changes = m.Apply(&store.Command{Op: store.OpSet, Key: []byte("new"), Value: []byte("n"), Version: ver(100001)}, changes)
	if err := w.Changes(changes); err != nil {
		t.Fatal(err)
	}
	if err := w.Keys(entries[len(entries)/2:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(m.Seq(), m.MaxVersion()); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func sampleMachine(t *testing.T) *store.Machine {
	t.Helper()
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 300)
	j.Close()
	return m
}

func TestBackupRoundTrip(t *testing.T) {
	m := sampleMachine(t)
	b := backupOf(t, m)
	got := store.New()
	info, err := ReadBackup(bytes.NewReader(b), got)
	if err != nil {
		t.Fatal(err)
	}
	if info.Seq != m.Seq() || info.Bytes != int64(len(b)) {
		t.Fatalf("backup info %+v; the machine is at change %d, the backup %d bytes", info, m.Seq(), len(b))
	}
	same(t, m, got)
}

func TestDamagedBackupIsRefused(t *testing.T) {
	b := backupOf(t, sampleMachine(t))
	for name, damaged := range map[string][]byte{
		"cut short":         b[:len(b)-10],
		"cut before footer": b[:len(b)/2],
		"byte flipped":      func() []byte { c := bytes.Clone(b); c[len(c)/2] ^= 1; return c }(),
		"data after footer": append(bytes.Clone(b), b[:40]...),
		"empty":             nil,
		"not a backup":      []byte("hello, world, this is not a backup"),
		"a journal segment": appendRecord(nil, appendHeader(nil, header{kind: recSegmentHeader, seq: 1})),
	} {
		if _, err := ReadBackup(bytes.NewReader(damaged), store.New()); err == nil {
			t.Errorf("%s: ReadBackup accepted it", name)
		}
	}
	// A whole record left out: the footer's count no longer matches.
	rr := newRecordReader(bytes.NewReader(b))
	rr.next()
	rr.next()
	second := rr.offset
	rr.next()
	third := rr.offset
	c := append(bytes.Clone(b[:second]), b[third:]...)
	if _, err := ReadBackup(bytes.NewReader(c), nil); err == nil || !strings.Contains(err.Error(), "footer counts") {
		t.Fatalf("a backup with a record left out: %v", err)
	}
}

func TestRestore(t *testing.T) {
	m := sampleMachine(t)
	file := filepath.Join(t.TempDir(), "backup")
	os.WriteFile(file, backupOf(t, m), 0o644)
	dir := filepath.Join(t.TempDir(), "data")
	r, err := Restore(file, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Keys != m.Len() || r.Replaced != "" {
		t.Fatalf("restore %+v of %d keys", r, m.Len())
	}
	j, got := open(t, dir)
	same(t, m, got)
	j.Close()

	// A directory that holds a store is refused, then replaced when told;
	// what it held is kept aside.
	if _, err := Restore(file, dir, false); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Restore into a directory with a store: %v", err)
	}
	before := dataFiles(t, dir)
	r, err = Restore(file, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range before {
		if kept, err := os.ReadFile(filepath.Join(r.Replaced, name)); err != nil || !bytes.Equal(kept, b) {
			t.Fatalf("%s was not kept in %s: %v", name, r.Replaced, err)
		}
	}
	j, got = open(t, dir)
	defer j.Close()
	same(t, m, got)
	if _, err := Restore(file, dir, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("Restore into a directory in use: %v", err)
	}
}

func TestRestoreChecksTheBackupFirst(t *testing.T) {
	b := backupOf(t, sampleMachine(t))
	file := filepath.Join(t.TempDir(), "backup")
	os.WriteFile(file, b[:len(b)-1], 0o644)
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 20)
	j.Close()
	before := dataFiles(t, dir)
	if _, err := Restore(file, dir, true); err == nil {
		t.Fatal("Restore of a damaged backup succeeded")
	}
	if after := dataFiles(t, dir); len(after) != len(before) {
		t.Fatalf("a refused restore changed the directory: %d files, were %d", len(after), len(before))
	}
}

func TestInterruptedRestoreStopsOpen(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, restoringName), nil, 0o644)
	if _, _, err := Open(Options{Dir: dir, Logger: quiet()}); !errors.Is(err, ErrRestoring) {
		t.Fatalf("Open of a directory whose restore did not complete: %v", err)
	}
}

// dataFiles returns the journal and snapshot files of dir by name.
func dataFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	names, _ := filepath.Glob(filepath.Join(dir, "*-*.*"))
	for _, n := range names {
		b, _ := os.ReadFile(n)
		files[filepath.Base(n)] = b
	}
	return files
}

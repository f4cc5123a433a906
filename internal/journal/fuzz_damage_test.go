package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dssio/dss/internal/store"
)

// pristine is a data directory with a snapshot and a segment after it,
// every change flushed (acknowledged), made once for FuzzDamage.
var pristine struct {
	once  sync.Once
	dir   string
	files map[string][]byte
	m     *store.Machine
}

func pristineDir(f *testing.F) {
	pristine.once.Do(func() {
		dir, err := os.MkdirTemp("", "dss-fuzz-damage")
		if err != nil {
			f.Fatal(err)
		}
		j, m, err := Open(Options{Dir: dir, Logger: quiet(), Fsync: FsyncNo})
		if err != nil {
			f.Fatal(err)
		}
		history(f, j, m, 1, 150)
		snapshot(f, j, m)
		history(f, j, m, 151, 150)
		if err := j.Close(); err != nil {
			f.Fatal(err)
		}
		pristine.dir, pristine.m = dir, m
		pristine.files = map[string][]byte{}
		names, _ := filepath.Glob(filepath.Join(dir, "*-*"))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				f.Fatal(err)
			}
			pristine.files[filepath.Base(n)] = b
		}
	})
	f.Cleanup(func() { os.RemoveAll(pristine.dir) })
}

// applyDamage damages b as ops say, four bytes an operation: what, where
// (two bytes, scaled to the file), and how much or which bits.
func applyDamage(b []byte, ops []byte) []byte {
	for ; len(ops) >= 4 && len(b) > 0; ops = ops[4:] {
		at := int(binary.LittleEndian.Uint16(ops[1:3])) * len(b) / 65536
		n := int(ops[3])
		switch ops[0] % 5 {
		case 0: // flip bits
			b[at] ^= max(ops[3], 1)
		case 1: // zero a range, up to 4 KiB
			clear(b[at:min(len(b), at+(n+1)*16)])
		case 2: // zero the length field of the record header at the start
			clear(b[:min(len(b), 4)])
		case 3: // cut the file short
			b = b[:at]
		case 4: // overwrite a range with a repeated byte
			for i := at; i < min(len(b), at+n+1); i++ {
				b[i] = ops[3] | 1
			}
		}
	}
	return b
}

// FuzzDamage damages the files of a data directory, headers included,
// with the operations the input describes (the first byte picks the
// file: even the segment, odd the snapshot) and opens it. Open must refuse
// with a CorruptError, or hold every acknowledged change, or have cut the
// end of the last segment as an interrupted write: then the log names a
// copy that holds exactly the bytes it cut, and every change before the
// cut is there. After a refusal, Repair must keep every file as it was
// and leave a directory that opens.
func FuzzDamage(f *testing.F) {
	pristineDir(f)
	for _, seed := range [][]byte{
		{0, 2, 0, 0, 0},              // the segment header's length zeroed
		{0, 1, 0, 0, 255},            // its first 4 KiB zeroed
		{0, 0, 0, 128, 4},            // a flipped byte mid-file
		{1, 3, 0, 128, 0},            // the snapshot cut in half
		{0, 3, 0xf0, 0xff, 0},        // the segment's end cut off
		{0, 1, 0xf8, 0xff, 255},      // zeros at the segment's end
		{1, 4, 0, 16, 7, 0, 0, 1, 3}, // the snapshot overwritten, then a flip
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		dir := t.TempDir()
		var target string
		for name, b := range pristine.files {
			if strings.HasPrefix(name, "snap-") == (ops[0]%2 == 1) {
				target = name
				b = applyDamage(bytes.Clone(b), ops[1:])
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		damaged, _ := os.ReadFile(filepath.Join(dir, target))
		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		j, m, err := Open(Options{Dir: dir, Logger: log, Fsync: FsyncNo})
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v", err)
			}
			checkRepair(t, dir)
			return
		}
		j.Close()
		var cut struct {
			File   string
			Offset int64
			Copy   string
		}
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "discarding the incomplete end") {
				if err := json.Unmarshal([]byte(line), &cut); err != nil {
					t.Fatal(err)
				}
			}
		}
		shortened := len(damaged) < len(pristine.files[target])
		if cut.File == "" && !shortened {
			same(t, pristine.m, m)
			return
		}
		// The end of the segment is gone (the damage cut the file short:
		// nothing in the format says how long it was), or looks like a
		// write a crash interrupted, which Open cut after keeping a copy.
		if strings.HasPrefix(target, "snap-") {
			t.Fatalf("Open accepted a damaged snapshot; it cut %q", cut.File)
		}
		end := int64(len(damaged))
		if cut.File != "" {
			if filepath.Base(cut.File) != target {
				t.Fatalf("Open cut %s; the damage was in %s", cut.File, target)
			}
			if cut.Offset < end {
				kept, err := os.ReadFile(cut.Copy)
				if err != nil || !bytes.Equal(kept, damaged[cut.Offset:]) {
					t.Fatalf("the copy %q of what was cut at %d does not hold it: %v", cut.Copy, cut.Offset, err)
				}
			}
			end = cut.Offset
		}
		want := store.New()
		for name, b := range pristine.files {
			if strings.HasPrefix(name, "snap-") {
				replayIntact(t, want, b, 0, 0)
			}
		}
		if end > 0 {
			replayIntact(t, want, pristine.files[target], end, int64(len(pristine.files[target])))
		}
		sameKeys(t, want, m)
	})
}

// checkRepair runs Repair on the damaged directory dir: every file must
// be kept as it was, and the directory must open afterwards.
func checkRepair(t *testing.T, dir string) {
	before := map[string][]byte{}
	names, _ := filepath.Glob(filepath.Join(dir, "*-*"))
	for _, n := range names {
		before[filepath.Base(n)], _ = os.ReadFile(n)
	}
	r, err := Repair(dir)
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if len(r.Damage) == 0 {
		t.Fatal("Open refused a directory in which Repair finds no damage")
	}
	for name, b := range before {
		kept, err := os.ReadFile(filepath.Join(r.Aside, name))
		if err != nil || !bytes.Equal(kept, b) {
			t.Fatalf("Repair did not keep %s as it was: %v", name, err)
		}
	}
	j, m, err := Open(Options{Dir: dir, Logger: quiet(), Fsync: FsyncNo})
	if err != nil {
		t.Fatalf("Open after Repair: %v", err)
	}
	defer j.Close()
	if m.Len() != r.KeysKept {
		t.Fatalf("Repair reported %d keys; the directory opens with %d", r.KeysKept, m.Len())
	}
	if slices.ContainsFunc(r.KeysDropped, func(k string) bool { return k == "" }) {
		t.Fatal("Repair names an empty key")
	}
}

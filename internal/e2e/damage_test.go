package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// written is what a SET that was acknowledged left behind.
type written struct {
	value, version string
}

// writeKeys sets n new keys named prefix<i>, with values of size bytes,
// from 8 clients and returns what each acknowledged SET wrote.
func writeKeys(t *testing.T, addr, prefix string, n, size int) map[string]written {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(map[string]written, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	const workers = 8
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(ctx, addr, fmt.Sprintf("%swriter-%d", prefix, w))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.close()
			for i := w; i < n; i += workers {
				key := fmt.Sprintf("%s%05d", prefix, i)
				value := strings.Repeat(string(rune('a'+i%26)), size)
				r, err := c.do(ctx, []string{"SET", key, value}, now())
				if err != nil || r.payload != "+OK\r\n" {
					t.Errorf("SET %s: %q, %v", key, r.payload, err)
					return
				}
				mu.Lock()
				out[key] = written{value: value, version: r.version}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// readKeys reads every key of want back and returns the ones missing; a
// key served with another value or version fails the test.
func readKeys(t *testing.T, p *process, want map[string]written) (missing []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dial(ctx, p.addr, "reader")
	if err != nil {
		t.Fatalf("reader: %v\n%s", err, p.out)
	}
	defer c.close()
	for key, w := range want {
		r, err := c.do(ctx, []string{"GET", key})
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		if r.payload == "$-1\r\n" {
			missing = append(missing, key)
			continue
		}
		if r.payload != fmt.Sprintf("$%d\r\n%s\r\n", len(w.value), w.value) || r.version != w.version {
			t.Fatalf("GET %s: %q version %s, want the value written with version %s", key, r.payload, r.version, w.version)
		}
	}
	return missing
}

// dataFiles returns the journal and snapshot files of dir by name.
func dataFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, pattern := range []string{"wal-*.log", "snap-*.snap"} {
		names, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Base(n)] = b
		}
	}
	return files
}

// lastSegmentSize returns the size of the last journal segment in dir.
func lastSegmentSize(t *testing.T, dir string) int64 {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if len(names) == 0 {
		t.Fatalf("no journal segment in %s", dir)
	}
	slices.Sort(names)
	st, err := os.Stat(names[len(names)-1])
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// checkNothingDisappeared checks that every file of before is in dir
// unchanged, or, byte for byte, in one of the directories that the
// server and dss recover keep what they cut or replace in.
func checkNothingDisappeared(t *testing.T, dir string, before map[string][]byte) {
	t.Helper()
	for name, b := range before {
		if now, err := os.ReadFile(filepath.Join(dir, name)); err == nil && bytes.Equal(now, b) {
			continue
		}
		kept := false
		copies, _ := filepath.Glob(filepath.Join(dir, "*-*", name+"*"))
		for _, c := range copies {
			got, _ := os.ReadFile(c)
			cur, _ := os.ReadFile(filepath.Join(dir, name))
			// A whole copy, or a copy of what was cut off the end.
			if bytes.Equal(got, b) || bytes.Equal(append(cur, got...), b) {
				kept = true
			}
		}
		if !kept {
			t.Fatalf("%s changed or disappeared without a copy (copies: %q)", name, copies)
		}
	}
}

// TestDamagedDataDirectory damages the journal or the snapshot of a
// stopped server in each way below and starts it again: it must refuse to
// start, naming the file and dss recover, or serve every key written
// before the damage; no file disappears without a copy. After a refusal,
// dss recover must keep every file, report what it dropped, and the server
// must then serve every key that the report does not count as dropped.
func TestDamagedDataDirectory(t *testing.T) {
	lastSegment := func(files map[string][]byte) string {
		last := ""
		for name := range files {
			if strings.HasPrefix(name, "wal-") && name > last {
				last = name
			}
		}
		return last
	}
	snapshot := func(files map[string][]byte) string {
		for name := range files {
			if strings.HasPrefix(name, "snap-") {
				return name
			}
		}
		return ""
	}
	for _, kind := range []struct {
		name   string
		file   func(map[string][]byte) string
		damage func([]byte) []byte
	}{
		{"header length zeroed", lastSegment, func(b []byte) []byte { clear(b[:4]); return b }},
		{"first 4 KiB zeroed", lastSegment, func(b []byte) []byte { clear(b[:4096]); return b }},
		{"byte flipped mid-file", lastSegment, func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"snapshot cut short", snapshot, func(b []byte) []byte { return b[:len(b)/2] }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--data", dir, "--fsync", "no", "--snapshot-after", "65536"}
			p := startDSS(t, anyPort, args...)
			keys := writeKeys(t, p.addr, "before/", 1500, 100)
			dsstest.Eventually(t, "a snapshot is written", func() bool {
				names, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
				return len(names) == 1
			})
			for k, w := range writeKeys(t, p.addr, "after/", 1000, 100) {
				keys[k] = w
			}
			// A snapshot that began late in the writes (when it begins
			// depends on the machine's timing) leaves the last segment
			// short: more keys until it holds enough to damage.
			for round := 0; lastSegmentSize(t, dir) < 16384; round++ {
				if round == 10 {
					t.Fatalf("the last journal segment holds %d bytes after %d rounds of writes", lastSegmentSize(t, dir), round)
				}
				for k, w := range writeKeys(t, p.addr, fmt.Sprintf("more%d/", round), 200, 100) {
					keys[k] = w
				}
			}
			if code := p.terminate(); code != 0 {
				t.Fatalf("exit status %d:\n%s", code, p.out)
			}
			before := dataFiles(t, dir)
			target := kind.file(before)
			if len(before[target]) < 8192 {
				t.Fatalf("%s holds %d bytes: too few to damage as planned", target, len(before[target]))
			}
			damaged := kind.damage(bytes.Clone(before[target]))
			if err := os.WriteFile(filepath.Join(dir, target), damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			before[target] = damaged

			p, ok := tryStartDSS(t, anyPort, args...)
			if ok {
				if missing := readKeys(t, p, keys); len(missing) != 0 {
					t.Fatalf("the server started with %s and lost %d keys, e.g. %s:\n%s", kind.name, len(missing), missing[0], p.out)
				}
				checkNothingDisappeared(t, dir, before)
				return
			}
			if out := p.out.String(); !strings.Contains(out, target) || !strings.Contains(out, "dss recover") {
				t.Fatalf("the refusal does not name %s and dss recover:\n%s", target, out)
			}
			checkNothingDisappeared(t, dir, before)

			out, code := runDSS(t, "recover", "--data", dir)
			if code != 0 {
				t.Fatalf("dss recover: exit status %d:\n%s", code, out)
			}
			t.Logf("dss recover:\n%s", out)
			checkNothingDisappeared(t, dir, before)
			p = startDSS(t, anyPort, args...)
			missing := readKeys(t, p, keys)
			dropped, exact := droppedRecords(t, out)
			switch {
			case kind.name == "header length zeroed" && len(missing) != 0:
				t.Fatalf("only the header was damaged and %d keys are missing", len(missing))
			case exact && len(missing) != dropped:
				t.Fatalf("%d keys are missing; dss recover reported %d records dropped", len(missing), dropped)
			case !exact && len(missing) < dropped:
				t.Fatalf("%d keys are missing; dss recover reported at least %d records dropped", len(missing), dropped)
			}
			// Each key was written once: a missing key's only record was
			// damaged, so a name the report gives must be missing.
			for _, k := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(out[strings.Index(out, "as far as the damaged records name them"):], -1) {
				if _, ok := keys[k[1]]; !ok {
					t.Fatalf("dss recover names %q, which was never written", k[1])
				}
			}
		})
	}
}

// droppedRecords reads how many records dss recover reports dropped, and
// whether that count is exact.
func droppedRecords(t *testing.T, out string) (int, bool) {
	t.Helper()
	m := regexp.MustCompile(`dropped (at least )?(\d+) records`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("dss recover does not say how many records it dropped:\n%s", out)
	}
	n, _ := strconv.Atoi(m[2])
	return n, m[1] == ""
}

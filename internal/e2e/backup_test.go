package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackupAndRestoreUnderLoad saves a backup of a running server while
// clients write, restores it into a new data directory and starts a
// server on it: every key acknowledged before the save began is there
// with its version, and the store is the one of a single moment (a client
// that writes ten keys in turn finds them holding ten consecutive writes).
func TestBackupAndRestoreUnderLoad(t *testing.T) {
	dir := t.TempDir()
	addr, httpAddr := freeAddr(t), freeAddr(t)
	p := startDSS(t, addr, "--data", dir, "--http-listen", httpAddr)
	// Enough data (about 16 MB) that the save outlasts what the sockets
	// buffer: the server copies while the clients write.
	before := writeKeys(t, addr, "before/", 3000, 4000)

	// The load: clients that overwrite and delete keys of their own, and
	// one that writes ten keys in turn with a counter.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var turns atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(ctx, addr, fmt.Sprint("load-", w))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.close()
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("load/%d/%d", w, i%700)
				args := []string{"SET", key, strings.Repeat("x", 1000+i%3000)}
				if i%5 == 0 {
					args = []string{"DEL", key}
				}
				if _, err := c.do(ctx, args, now()); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := dial(ctx, addr, "turns")
		if err != nil {
			t.Error(err)
			return
		}
		defer c.close()
		for n := 0; ctx.Err() == nil; n++ {
			r, err := c.do(ctx, []string{"SET", fmt.Sprint("turn/", n%10), strconv.Itoa(n)}, now())
			if err != nil || r.payload != "+OK\r\n" {
				if ctx.Err() == nil {
					t.Errorf("SET turn: %q %v", r.payload, err)
				}
				return
			}
			turns.Store(int64(n + 1))
		}
	}()
	waitFor := func(n int64) {
		deadline := time.Now().Add(30 * time.Second)
		for turns.Load() < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(300)
	// The backup goes to standard output, read slowly, so that the save
	// takes a while.
	file := filepath.Join(t.TempDir(), "store.backup")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	save := exec.Command(dssBinary, "snapshot", "save", "-", "--http", httpAddr)
	var stderr bytes.Buffer
	save.Stdout, save.Stderr = &slowWriter{w: f}, &stderr
	startTurns := turns.Load()
	err = save.Run()
	endTurns := turns.Load()
	f.Close()
	waitFor(endTurns + 50)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("dss snapshot save: %v:\n%s\nserver:\n%s", err, stderr.String(), p.out)
	}
	streamed := logLine(p.out.String(), "backup streamed")
	t.Logf("%d writes of the turn client during the save; server: %s", endTurns-startTurns, streamed)
	if endTurns == startTurns || strings.Contains(streamed, " changes=0 ") {
		t.Fatalf("nothing was written while the backup was copied: the test tested nothing (%s)", streamed)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if out, code := runDSS(t, "snapshot", "restore", file, "--data", restored); code != 0 {
		t.Fatalf("dss snapshot restore: exit status %d:\n%s", code, out)
	}
	if out, code := runDSS(t, "snapshot", "restore", file, "--data", restored); code == 0 || !strings.Contains(out, "--force") {
		t.Fatalf("a second restore into the same directory: exit status %d:\n%s", code, out)
	}
	if out, code := runDSS(t, "snapshot", "restore", file, "--data", restored, "--force"); code != 0 || !strings.Contains(out, "replaced") {
		t.Fatalf("dss snapshot restore --force: exit status %d:\n%s", code, out)
	}
	// A save to a file.
	again := filepath.Join(t.TempDir(), "again.backup")
	if out, code := runDSS(t, "snapshot", "save", again, "--http", httpAddr); code != 0 || !strings.Contains(out, "saved") {
		t.Fatalf("dss snapshot save FILE: exit status %d:\n%s", code, out)
	}
	q := startDSS(t, freeAddr(t), "--data", restored)
	if missing := readKeys(t, q, before); len(missing) != 0 {
		t.Fatalf("%d keys acknowledged before the save are missing from the restored store, e.g. %s", len(missing), missing[0])
	}

	// One moment: the ten turn keys hold ten consecutive writes.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dial(ctx, q.addr, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var values []int
	for i := 0; i < 10; i++ {
		r, err := c.do(ctx, []string{"GET", fmt.Sprint("turn/", i)})
		if err != nil {
			t.Fatal(err)
		}
		_, v, ok := strings.Cut(strings.TrimSuffix(r.payload, "\r\n"), "\r\n")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("turn/%d restored as %q", i, r.payload)
		}
		values = append(values, n)
	}
	sort.Ints(values)
	for i := 1; i < len(values); i++ {
		if values[i] != values[i-1]+1 {
			t.Fatalf("the turn keys hold %v: not the store of one moment", values)
		}
	}
	if int64(values[9]) < startTurns-1 {
		t.Fatalf("the turn keys hold %v; %d writes were acknowledged before the save began", values, startTurns)
	}
}

// logLine returns the first line of out that holds what.
func logLine(out, what string) string {
	for line := range strings.Lines(out) {
		if strings.Contains(line, what) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// slowWriter passes writes on in pieces of 32 KiB, a millisecond apart.
type slowWriter struct{ w io.Writer }

func (s *slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 32<<10)
		m, err := s.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
		time.Sleep(time.Millisecond)
	}
	return n, nil
}

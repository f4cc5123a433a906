package journal

import (
	"fmt"
	"testing"

	"github.com/dssio/dss/internal/store"
)

// BenchmarkRecover measures Open on a directory with a million keys
// (16-byte keys, 100-byte values):
//
//   - half-journal: half of them in a snapshot, half in the journal after
//     it;
//   - after-deletes: two million keys in a snapshot, then half of them
//     deleted, and the snapshot that the shrinking data makes due (the
//     policy must make it due) written, as the server does.
//
// go test -run XXX -bench BenchmarkRecover -benchtime 5x ./internal/journal/
func BenchmarkRecover(b *testing.B) {
	const keys = 1_000_000
	value := make([]byte, 100)
	set := func(j *Journal, m *store.Machine, i int) {
		c := &store.Command{Op: store.OpSet, Key: []byte(fmt.Sprintf("key:%012d", i)), Value: value, Version: ver(int64(i))}
		_, changes := m.Apply(c, nil)
		j.Append(&changes[0])
		if i%10000 == 0 {
			j.Flush()
		}
	}
	b.Run("half-journal", func(b *testing.B) {
		dir := b.TempDir()
		j, m, err := Open(Options{Dir: dir, Logger: quiet(), SnapshotAfter: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < keys; i++ {
			if i == keys/2 {
				snapshot(b, j, m)
			}
			set(j, m, i)
		}
		j.Close()
		benchOpen(b, dir, keys)
	})
	b.Run("after-deletes", func(b *testing.B) {
		dir := b.TempDir()
		j, m, err := Open(Options{Dir: dir, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 2*keys; i++ {
			set(j, m, i)
		}
		snapshot(b, j, m)
		for i := 0; i < keys; i++ {
			c := &store.Command{Op: store.OpDel, Key: []byte(fmt.Sprintf("key:%012d", 2*i)), Version: ver(int64(2*keys + i))}
			_, changes := m.Apply(c, nil)
			j.Append(&changes[0])
		}
		j.Flush()
		if !j.SnapshotDue(m.Len(), m.DataBytes()) {
			b.Fatal("no snapshot due after half the keys were deleted")
		}
		snapshot(b, j, m)
		j.Close()
		benchOpen(b, dir, keys)
	})
}

func benchOpen(b *testing.B, dir string, keys int) {
	b.ResetTimer()
	for b.Loop() {
		j, m, err := Open(Options{Dir: dir, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		if m.Len() != keys {
			b.Fatalf("%d keys", m.Len())
		}
		j.Close()
	}
}

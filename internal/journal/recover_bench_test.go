package journal

import (
	"fmt"
	"testing"

	"github.com/dssio/dss/internal/store"
)

// BenchmarkRecover measures Open on a directory with a million keys
// (16-byte keys, 100-byte values): half in a snapshot, half in the
// journal after it.
func BenchmarkRecover(b *testing.B) {
	const keys = 1_000_000
	dir := b.TempDir()
	j, m, err := Open(Options{Dir: dir, Logger: quiet(), SnapshotAfter: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	for i := 0; i < keys; i++ {
		if i == keys/2 {
			snapshot(b, j, m)
		}
		c := &store.Command{Op: store.OpSet, Key: []byte(fmt.Sprintf("key:%012d", i)), Value: value, Version: ver(int64(i))}
		_, changes := m.Apply(c, nil)
		j.Append(&changes[0])
		if i%10000 == 0 {
			j.Flush()
		}
	}
	j.Close()
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

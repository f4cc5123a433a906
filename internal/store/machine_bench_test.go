package store

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dssio/dss/hlc"
)

var benchValue = bytes.Repeat([]byte("v"), 100)

// benchKeys returns n distinct keys.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte("bench:" + strconv.Itoa(i))
	}
	return keys
}

// BenchmarkApplySetNewKey stores a new key per operation: the index
// grows, and the record goes to a slab.
func BenchmarkApplySetNewKey(b *testing.B) {
	b.ReportAllocs()
	keys := benchKeys(1 << 20)
	m := New()
	var changes []Change
	c := Command{Op: OpSet, Value: benchValue, Time: 1}
	i := 0
	for b.Loop() {
		if i == len(keys) {
			b.StopTimer()
			m, i = New(), 0
			b.StartTimer()
		}
		c.Key = keys[i]
		c.Version = hlc.Timestamp{Wall: 1, Counter: uint32(i), Node: "n"}
		_, changes = m.Apply(&c, changes[:0])
		i++
	}
}

// filledMachine returns a machine holding keys, each with benchValue.
func filledMachine(keys [][]byte) *Machine {
	m := New()
	c := Command{Op: OpSet, Value: benchValue, Time: 1}
	for i, k := range keys {
		c.Key, c.Version = k, hlc.Timestamp{Wall: 1, Counter: uint32(i), Node: "n"}
		m.Apply(&c, nil)
	}
	return m
}

// benchOverwrites overwrites the keys of m that next picks, one per
// operation, alternating between two values as a real overwrite changes
// the value.
func benchOverwrites(b *testing.B, m *Machine, keys [][]byte, next func(i int) int) {
	b.ReportAllocs()
	other := bytes.Repeat([]byte("w"), 100)
	var changes []Change
	c := Command{Op: OpSet, Time: 1}
	i := 0
	for b.Loop() {
		c.Key = keys[next(i)]
		c.Value = benchValue
		if i&1 == 1 {
			c.Value = other
		}
		c.Version = hlc.Timestamp{Wall: 2, Counter: uint32(i), Node: "n"}
		_, changes = m.Apply(&c, changes[:0])
		i++
	}
}

// BenchmarkApplySetExistingKey overwrites one of 10,000 keys per
// operation, in order.
func BenchmarkApplySetExistingKey(b *testing.B) {
	keys := benchKeys(10000)
	benchOverwrites(b, filledMachine(keys), keys, func(i int) int { return i % len(keys) })
}

// BenchmarkApplySetRandomKey overwrites keys in random order, so that
// with many keys the lookup and the compaction that follows overwrites
// (every record it looks at has its newer copy somewhere else) miss the
// processor's caches, as a server's do.
func BenchmarkApplySetRandomKey(b *testing.B) {
	for _, n := range []int{10000, 1000000} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			keys := benchKeys(n)
			r := rand.New(rand.NewPCG(1, 2))
			benchOverwrites(b, filledMachine(keys), keys, func(int) int { return r.IntN(n) })
		})
	}
}

// BenchmarkGet reads keys in random order: with 2,000,000 keys (about
// 350 MB of records and index) most reads miss the processor's caches,
// as a server's do with millions of keys.
func BenchmarkGet(b *testing.B) {
	for _, n := range []int{10000, 2000000} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			keys := benchKeys(n)
			m := filledMachine(keys)
			order := rand.New(rand.NewPCG(1, 2)).Perm(n)
			i := 0
			for b.Loop() {
				if _, _, ok := m.Get(keys[order[i%n]], 1); !ok {
					b.Fatal("missing key")
				}
				i++
			}
		})
	}
}

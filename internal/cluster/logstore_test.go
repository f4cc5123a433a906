package cluster

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/journal"
)

// TestLogStoreEntriesOutliveTheirTransaction: an entry read back stays
// intact while the file grows and is written on, as Raft keeps entries it
// read until it has applied them.
func TestLogStoreEntriesOutliveTheirTransaction(t *testing.T) {
	s, err := openLogStore(t.TempDir(), journal.FsyncNo)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := func(i uint64) []byte { return bytes.Repeat([]byte(fmt.Sprint(i%10)), 4096) }
	var kept []raft.Log
	for i := uint64(1); i <= 2000; i++ {
		at := time.Unix(0, int64(i))
		if err := s.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: data(i), AppendedAt: at}}); err != nil {
			t.Fatal(err)
		}
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, l)
	}
	for _, l := range kept {
		if !bytes.Equal(l.Data, data(l.Index)) || l.Term != 1 || l.Type != raft.LogCommand || l.AppendedAt.UnixNano() != int64(l.Index) {
			t.Fatalf("entry %d changed after it was read", l.Index)
		}
	}
	if first, _ := s.FirstIndex(); first != 1 {
		t.Fatalf("first index %d", first)
	}
	if err := s.DeleteRange(1, 1500); err != nil {
		t.Fatal(err)
	}
	if first, _ := s.FirstIndex(); first != 1501 {
		t.Fatalf("first index after compaction: %d", first)
	}
	if last, _ := s.LastIndex(); last != 2000 {
		t.Fatalf("last index: %d", last)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("term %d", v)
	}
}

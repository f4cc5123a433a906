package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOldLogFormatIsRefused: a data directory with the Raft log of the
// earlier bbolt store is refused with a message that says how to start
// the node afresh, and is left as it was.
func TestOldLogFormatIsRefused(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "raft", "raft.db")
	if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("bbolt pages"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{NodeID: "n1", Listen: "127.0.0.1:0", DataDir: dir, Peers: []Peer{{ID: "n1", Addr: "127.0.0.1:1"}}})
	if err == nil {
		n.Close()
		t.Fatal("a node started on a data directory of the old format")
	}
	if !errors.Is(err, ErrOldLogFormat) || !strings.Contains(err.Error(), "move "+filepath.Join(dir, "raft")+" away") {
		t.Fatalf("error: %v", err)
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "bbolt pages" {
		t.Fatalf("the old file after the refusal: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", "log")); !os.IsNotExist(err) {
		t.Fatalf("a new log was started beside the old one: %v", err)
	}
}

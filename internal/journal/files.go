package journal

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

const lockName = "LOCK"

func segmentName(first uint64) string { return fmt.Sprintf("wal-%016x.log", first) }
func snapshotName(seq uint64) string  { return fmt.Sprintf("snap-%016x.snap", seq) }

// parseName reads the sequence number out of a segment or snapshot name.
func parseName(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	hex := name[len(prefix) : len(name)-len(suffix)]
	if len(hex) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	return v, err == nil
}

// openSized opens the file name for reading and returns its size.
func openSized(name string) (*os.File, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("journal: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("journal: %w", err)
	}
	return f, info.Size(), nil
}

// dirFiles lists the segments and snapshots of dir, each sorted by
// sequence number.
type dirFiles struct {
	segments  []uint64 // first seq of each segment
	snapshots []uint64
	temps     []string // leftovers of interrupted snapshot writes
}

func listDir(dir string) (dirFiles, error) {
	var f dirFiles
	entries, err := os.ReadDir(dir)
	if err != nil {
		return f, err
	}
	for _, e := range entries {
		name := e.Name()
		if seq, ok := parseName(name, "wal-", ".log"); ok {
			f.segments = append(f.segments, seq)
		} else if seq, ok := parseName(name, "snap-", ".snap"); ok {
			f.snapshots = append(f.snapshots, seq)
		} else if strings.HasSuffix(name, ".tmp") {
			f.temps = append(f.temps, name)
		}
	}
	sort.Slice(f.segments, func(i, j int) bool { return f.segments[i] < f.segments[j] })
	sort.Slice(f.snapshots, func(i, j int) bool { return f.snapshots[i] < f.snapshots[j] })
	return f, nil
}

// ErrLocked reports a data directory that another process uses.
var ErrLocked = errors.New("journal: the data directory is in use by another dss process")

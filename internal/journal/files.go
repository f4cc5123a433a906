package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

// lockDir takes the directory's lock file, which the kernel releases when
// the process ends, however it ends.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("journal: lock %s: %w", dir, err)
	}
	return f, nil
}

// syncDir makes the creation, renaming and removal of files in dir
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

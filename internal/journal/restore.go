package journal

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dssio/dss/internal/store"
)

// ErrNotEmpty reports a data directory that Restore would replace.
var ErrNotEmpty = errors.New("journal: the data directory is not empty")

// RestoreInfo says what Restore did.
type RestoreInfo struct {
	BackupInfo
	Keys int
	// Replaced is the directory that holds the journal and snapshot files
	// that were in the data directory, "" when there were none.
	Replaced string
}

// Restore makes dir hold the state of the backup file: it reads and checks
// the whole backup first, then writes it into dir as a snapshot. dir must
// be missing or empty unless replace is set; then its journal and
// snapshot files are moved into a new directory replaced-<time> inside it,
// not deleted. The server must not be running on dir.
func Restore(file, dir string, replace bool) (*RestoreInfo, error) {
	if err := checkEmpty(dir, replace); err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	m := store.New()
	info, err := ReadBackup(bufio.NewReaderSize(f, 1<<20), m)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := checkEmpty(dir, replace); err != nil { // again, under the lock
		return nil, err
	}
	r := &RestoreInfo{BackupInfo: info, Keys: m.Len()}
	// Until the restore is complete, Open refuses the directory: a crash
	// halfway must not leave a store that starts with part of the state.
	marker := filepath.Join(dir, restoringName)
	if err := os.WriteFile(marker, []byte(file+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	files, err := listDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var old []string
	for _, seq := range files.snapshots {
		old = append(old, snapshotName(seq))
	}
	for _, seq := range files.segments {
		old = append(old, segmentName(seq))
	}
	old = append(old, files.temps...)
	if len(old) > 0 {
		if r.Replaced, err = newAsideDir(dir, "replaced"); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		for _, name := range old {
			if err := os.Rename(filepath.Join(dir, name), filepath.Join(r.Replaced, name)); err != nil {
				return nil, fmt.Errorf("journal: %w", err)
			}
		}
		if err := syncDir(r.Replaced); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	tmp, final, _, err := writeSnapshotFile(dir, m)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := os.Remove(marker); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return r, nil
}

// restoringName is the file that marks a data directory a restore is
// writing.
const restoringName = "RESTORING"

// ErrRestoring reports a data directory whose restore did not complete.
var ErrRestoring = errors.New("journal: a restore into the data directory did not complete; run `dss snapshot restore` again")

// checkEmpty refuses a data directory that holds anything but its lock
// file, unless replace is set.
func checkEmpty(dir string, replace bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for _, e := range entries {
		if e.Name() != lockName && e.Name() != restoringName && !replace {
			return fmt.Errorf("%w: %s holds %s", ErrNotEmpty, dir, e.Name())
		}
	}
	return nil
}

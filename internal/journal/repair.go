package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dssio/dss/internal/store"
)

// Repair makes a damaged data directory usable again. It keeps everything
// up to the first damage and moves the rest into a new directory
// damaged-<time> inside dir: a damaged snapshot (an older one, if any, is
// used instead), and the damaged segment and every segment after it; the
// intact beginning of the damaged segment stays. It returns what it did,
// a line per action; none when nothing is damaged. The server must not be
// running.
func Repair(dir string) ([]string, error) {
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	files, err := listDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	var actions []string
	aside := filepath.Join(dir, "damaged-"+time.Now().UTC().Format("20060102T150405Z"))
	moveAside := func(name string) error {
		if err := os.MkdirAll(aside, 0o755); err != nil {
			return err
		}
		return os.Rename(filepath.Join(dir, name), filepath.Join(aside, name))
	}

	// The newest snapshot that loads is the base.
	for i := len(files.snapshots) - 1; i >= 0; i-- {
		name := snapshotName(files.snapshots[i])
		_, _, err := loadSnapshot(filepath.Join(dir, name), store.New())
		if err == nil {
			break
		}
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return actions, err
		}
		if err := moveAside(name); err != nil {
			return actions, fmt.Errorf("journal: %w", err)
		}
		actions = append(actions, fmt.Sprintf("moved the damaged snapshot %s to %s (%s); keys that no later journal record rewrites are lost", name, aside, ce.Reason))
	}

	for i, first := range files.segments {
		name := segmentName(first)
		at, damage, err := firstDamage(filepath.Join(dir, name))
		if err != nil {
			return actions, err
		}
		if damage == nil {
			continue
		}
		if i == len(files.segments)-1 && tornTail(filepath.Join(dir, name), at, damage) {
			continue // a torn tail: the server cuts it off itself
		}
		reason := damage.Error()
		// Keep a copy of the whole damaged segment, then cut it.
		if err := copyFile(filepath.Join(dir, name), filepath.Join(aside, name)); err != nil {
			return actions, fmt.Errorf("journal: %w", err)
		}
		if err := os.Truncate(filepath.Join(dir, name), at); err != nil {
			return actions, fmt.Errorf("journal: %w", err)
		}
		actions = append(actions, fmt.Sprintf("cut %s at offset %d (%s); the original is in %s", name, at, reason, aside))
		for _, later := range files.segments[i+1:] {
			if err := moveAside(segmentName(later)); err != nil {
				return actions, fmt.Errorf("journal: %w", err)
			}
			actions = append(actions, fmt.Sprintf("moved %s, which follows the damage, to %s", segmentName(later), aside))
		}
		break
	}
	if len(actions) > 0 {
		if err := syncDir(dir); err != nil {
			return actions, err
		}
	}
	return actions, nil
}

// firstDamage returns the offset of the first unreadable record of a
// segment and why it is unreadable; a nil damage when there is none.
func firstDamage(name string) (at int64, damage, err error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	rr, err := segmentReader(f)
	if err != nil {
		return 0, fmt.Errorf("unreadable segment header: %w", err), nil
	}
	in := nodes{}
	var c store.Change
	for {
		at := rr.offset
		payload, err := rr.next()
		switch {
		case err == io.EOF:
			return 0, nil, nil
		case err != nil:
			return at, err, nil
		}
		if err := decodeChange(payload, in, &c); err != nil {
			return at, errors.New("malformed change record"), nil
		}
	}
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

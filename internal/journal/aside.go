package journal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Nothing that the journal cuts off or replaces is deleted: it goes to a
// directory inside the data directory, named after what put it there and
// when (torn-<time> for the end of a write that a crash interrupted,
// damaged-<time> for what `dss recover` replaced). The operator removes
// these once they are not needed.

// newAsideDir creates a new directory kind-<time> inside dir.
func newAsideDir(dir, kind string) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405.000Z")
	name := filepath.Join(dir, kind+"-"+stamp)
	for i := 2; ; i++ {
		err := os.Mkdir(name, 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		name = filepath.Join(dir, fmt.Sprintf("%s-%s-%d", kind, stamp, i))
	}
}

// copyRange copies the bytes of the file from, starting at offset off,
// to a new file to, durably.
func copyRange(from string, off int64, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := src.Seek(off, io.SeekStart); err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(to))
}

// keepAside gives the file name a second name in the directory aside, so
// that it outlives the removal or replacement of name. Files are never
// changed in place once they are kept this way, so a hard link is a copy;
// where the file system has no hard links, the bytes are copied.
func keepAside(name, aside string) error {
	to := filepath.Join(aside, filepath.Base(name))
	if err := os.Link(name, to); err == nil {
		return nil
	}
	return copyRange(name, 0, to)
}

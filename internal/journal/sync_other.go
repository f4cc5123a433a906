//go:build !linux

package journal

import "os"

// fdatasync forces f's data to stable storage. Outside Linux it is a full
// sync: on macOS, File.Sync asks the drive itself to write its cache
// (F_FULLFSYNC), as a plain fsync there does not; on Windows it is
// FlushFileBuffers.
func fdatasync(f *os.File) error { return f.Sync() }

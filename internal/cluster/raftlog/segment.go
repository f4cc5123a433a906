package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dssio/dss/internal/journal"
)

// segmentMagic starts the header record of every segment.
const segmentMagic = "dss-raft-log-1\n"

// segment is one file of the log.
type segment struct {
	name  string
	first uint64 // the index of its first entry
	f     *os.File
	// offsets[i] is the offset of the record of entry first+i.
	offsets []int64
	size    int64 // the end of its last record
}

// last returns the index of the segment's last entry, first-1 when it
// holds none.
func (s *segment) last() uint64 { return s.first + uint64(len(s.offsets)) - 1 }

// span returns the offset and length of entry i's record.
func (s *segment) span(i uint64) (int64, int64) {
	k := i - s.first
	end := s.size
	if k+1 < uint64(len(s.offsets)) {
		end = s.offsets[k+1]
	}
	return s.offsets[k], end - s.offsets[k]
}

func segmentName(first uint64) string { return fmt.Sprintf("log-%020d.seg", first) }

// listSegments returns the first indexes of the segments in dir, in
// order.
func listSegments(dir string) ([]uint64, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var firsts []uint64
	for _, e := range names {
		n := e.Name()
		if !strings.HasPrefix(n, "log-") || !strings.HasSuffix(n, ".seg") {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(n, "log-"), ".seg"), 10, 64)
		if err != nil {
			continue
		}
		firsts = append(firsts, first)
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	return firsts, nil
}

func segmentHeader(first uint64) []byte {
	return journal.AppendFrame(nil, binary.AppendUvarint([]byte(segmentMagic), first))
}

// createSegment creates the segment whose first entry is first, with its
// header, durably.
func createSegment(dir string, first uint64) (*segment, error) {
	name := filepath.Join(dir, segmentName(first))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	hdr := segmentHeader(first)
	if _, err := f.WriteAt(hdr, 0); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := journal.SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return &segment{name: name, first: first, f: f, size: int64(len(hdr))}, nil
}

// CorruptError reports damage in a file of the Raft log.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("cluster: the Raft log file %s is damaged at offset %d: %s; "+
		"to bring the node back, move its directory %s away (keep it for inspection) and start the node again: "+
		"it is still a member of the cluster and receives the leader's snapshot",
		e.File, e.Offset, e.Reason, filepath.Dir(filepath.Dir(e.File)))
}

// openSegment reads the segment named name, whose first entry is first,
// and indexes its entries. In the last segment, the end of a write that
// a crash interrupted is cut off (a copy is kept); a segment whose
// header never completed, with no entry after it, is removed. It
// returns nil, nil for such a removed segment.
func openSegment(dir string, first uint64, last bool, warn func(msg string, args ...any)) (*segment, error) {
	name := filepath.Join(dir, segmentName(first))
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s, err := readSegment(f, name, first, last, warn)
	if err != nil || s == nil {
		f.Close()
		if s == nil && err == nil {
			err = os.Remove(name)
			if err == nil {
				err = journal.SyncDir(dir)
			}
		}
		return nil, err
	}
	return s, nil
}

func readSegment(f *os.File, name string, first uint64, last bool, warn func(msg string, args ...any)) (*segment, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	s := &segment{name: name, first: first, f: f}
	fr := journal.NewFrameReader(f)
	payload, _, err := fr.Next()
	if err == nil && !bytes.Equal(journal.AppendFrame(nil, payload), segmentHeader(first)) {
		return nil, &CorruptError{File: name, Offset: 0, Reason: "not the header of the segment its name says"}
	}
	if err != nil {
		if last {
			torn, terr := journal.TornTail(f, size, 0, err, isEntry)
			if terr != nil {
				return nil, terr
			}
			if torn {
				return nil, cut(name, size, 0, err, warn)
			}
		}
		return nil, &CorruptError{File: name, Offset: 0, Reason: "unreadable segment header: " + errText(err)}
	}
	for {
		payload, at, err := fr.Next()
		if errors.Is(err, io.EOF) {
			s.size = fr.Offset()
			return s, nil
		}
		if err == nil {
			i, ok := entryIndex(payload)
			if !ok {
				return nil, &CorruptError{File: name, Offset: at, Reason: "malformed log entry"}
			}
			if want := first + uint64(len(s.offsets)); i != want {
				return nil, &CorruptError{File: name, Offset: at, Reason: fmt.Sprintf("entry %d where entry %d belongs", i, want)}
			}
			s.offsets = append(s.offsets, at)
			continue
		}
		if last {
			torn, terr := journal.TornTail(f, size, at, err, isEntry)
			if terr != nil {
				return nil, terr
			}
			if torn {
				if err := cut(name, size, at, err, warn); err != nil {
					return nil, err
				}
				s.size = at
				return s, nil
			}
		}
		return nil, &CorruptError{File: name, Offset: at, Reason: errText(err)}
	}
}

// cut cuts the torn end of a segment at offset at, keeping a copy.
func cut(name string, size, at int64, reason error, warn func(msg string, args ...any)) error {
	copyName, err := journal.CutTornTail(name, size, at)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	warn("discarding the incomplete end of the Raft log left by a crash",
		"file", name, "offset", at, "bytes", size-at, "reason", errText(reason), "copy", copyName)
	return nil
}

func errText(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "cut short"
	}
	return err.Error()
}

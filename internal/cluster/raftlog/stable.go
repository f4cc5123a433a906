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
	"sync"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/journal"
)

const stableMagic = "dss-raft-stable-1\n"

// Stable is Raft's stable store (the current term, the vote): a small
// file of records, each setting a key, the last one of a key winning.
type Stable struct {
	name string

	mu   sync.Mutex
	vals map[string][]byte // guarded by mu
	f    *os.File          // guarded by mu; open for appending, nil until the first Set
	size int64             // guarded by mu; the end of the last intact record
}

var _ raft.StableStore = (*Stable)(nil)

// OpenStable opens (or starts) the file name. A record that a crash cut
// short at the end of the file is ignored (it was never acknowledged to
// Raft): the next Set replaces the file whole. Any other damage is
// refused.
func OpenStable(name string) (*Stable, error) {
	s := &Stable{name: name, vals: map[string][]byte{}}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	fr := journal.NewFrameReader(f)
	payload, _, err := fr.Next()
	if err != nil || string(payload) != stableMagic {
		f.Close()
		return nil, &CorruptError{File: name, Offset: 0, Reason: "not a Raft stable store"}
	}
	for {
		payload, at, err := fr.Next()
		if errors.Is(err, io.EOF) {
			s.f, s.size = f, at
			return s, nil
		}
		if err != nil {
			torn, terr := journal.TornTail(f, info.Size(), at, err, isPair)
			f.Close()
			if terr == nil && torn {
				return s, nil // f stays nil: the next Set rewrites the file
			}
			return nil, &CorruptError{File: name, Offset: at, Reason: errText(err)}
		}
		k, v, ok := decodePair(payload)
		if !ok {
			f.Close()
			return nil, &CorruptError{File: name, Offset: at, Reason: "malformed record"}
		}
		s.vals[string(k)] = bytes.Clone(v)
	}
}

func decodePair(b []byte) (k, v []byte, ok bool) {
	if k, b, ok = lengthPrefixed(b); !ok {
		return nil, nil, false
	}
	if v, b, ok = lengthPrefixed(b); !ok || len(b) != 0 {
		return nil, nil, false
	}
	return k, v, true
}

func isPair(b []byte) bool {
	_, _, ok := decodePair(b)
	return ok
}

// Set sets key to val, durably: one record appended and one fdatasync
// (a vote costs two, a new term one). When the file has grown past
// stableCompactAt it is replaced by one that holds each value once.
func (s *Stable) Set(key, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil || s.size >= stableCompactAt {
		old, had := s.vals[string(key)]
		s.vals[string(key)] = bytes.Clone(val)
		if err := s.rewriteLocked(); err != nil {
			if had {
				s.vals[string(key)] = old
			} else {
				delete(s.vals, string(key))
			}
			return err
		}
		return nil
	}
	rec := journal.AppendFrame(nil, appendPair(nil, key, val))
	if _, err := s.f.WriteAt(rec, s.size); err != nil {
		return fmt.Errorf("cluster: write %s: %w", s.name, err)
	}
	if err := journal.Fdatasync(s.f); err != nil {
		// What the file holds is unknown: the next Set replaces it whole.
		s.f.Close()
		s.f = nil
		return fmt.Errorf("cluster: fsync %s: %w", s.name, err)
	}
	s.size += int64(len(rec))
	s.vals[string(key)] = bytes.Clone(val)
	return nil
}

// stableCompactAt is the size past which the stable file is rewritten.
var stableCompactAt int64 = 64 << 10

func appendPair(b, k, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(k)))
	b = append(b, k...)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// rewriteLocked replaces the file with one that holds every value once,
// durably (written aside, synced, renamed, the directory synced), and
// opens it for appending.
func (s *Stable) rewriteLocked() error {
	keys := make([]string, 0, len(s.vals))
	for k := range s.vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := journal.AppendFrame(nil, []byte(stableMagic))
	for _, k := range keys {
		b = journal.AppendFrame(b, appendPair(nil, []byte(k), s.vals[k]))
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	tmp := s.name + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, s.name)
	}
	if err == nil {
		err = journal.SyncDir(filepath.Dir(s.name))
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("cluster: write %s: %w", s.name, err)
	}
	s.f, s.size = f, int64(len(b))
	return nil
}

// Close closes the file.
func (s *Stable) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Get returns key's value; nil (and no error) when it has none, as Raft
// expects of a store that never held it.
func (s *Stable) Get(key []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.vals[string(key)]), nil
}

// SetUint64 sets key to val, durably.
func (s *Stable) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns key's value, 0 when it has none.
func (s *Stable) GetUint64(key []byte) (uint64, error) {
	v, _ := s.Get(key)
	if len(v) != 8 {
		return 0, nil
	}
	return binary.BigEndian.Uint64(v), nil
}

// Repair writes the file again from the values in memory if it is not
// where it was (deleted, moved away or replaced while the node runs):
// without it, a restart would forget the node's term and vote and let it
// vote twice in one term. It returns what it found (nil when the file
// was in place) and, if writing it again failed, why.
func (s *Stable) Repair() (found, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil, nil // not written yet, or rewritten whole by the next Set
	}
	if found = journal.CheckInPlace(s.f, s.name); found == nil {
		return nil, nil
	}
	return found, s.rewriteLocked()
}

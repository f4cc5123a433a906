package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/dssio/dss/internal/journal"
)

// logStore keeps the Raft log and the Raft node's stable values (term,
// vote) in one bbolt file, raft.db, in the data directory. Appends follow
// the --fsync policy of the single node's journal: "always" forces every
// append batch to stable storage before Raft counts it (so an
// acknowledged write survives a power loss of a majority), "everysec"
// once a second, "no" leaves it to the operating system. The term and
// the vote are always forced, whatever the policy: Raft's safety rests on
// them.
type logStore struct {
	db     *bolt.DB
	policy journal.Fsync

	stop chan struct{}
	done sync.WaitGroup
}

var (
	_ raft.LogStore    = (*logStore)(nil)
	_ raft.StableStore = (*logStore)(nil)

	bucketLogs   = []byte("logs")
	bucketStable = []byte("stable")
)

// openLogStore opens (or creates) dir/raft.db.
func openLogStore(dir string, policy journal.Fsync) (*logStore, error) {
	name := filepath.Join(dir, "raft.db")
	db, err := bolt.Open(name, 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true})
	if err != nil {
		return nil, fmt.Errorf("cluster: open %s: %w", name, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketLogs); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketStable)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cluster: %s: %w", name, err)
	}
	s := &logStore{db: db, policy: policy, stop: make(chan struct{})}
	db.NoSync = policy != journal.FsyncAlways
	if policy == journal.FsyncEverySec {
		s.done.Add(1)
		go s.syncEverySecond()
	}
	return s, nil
}

func (s *logStore) syncEverySecond() {
	defer s.done.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.db.Sync()
		}
	}
}

// Close forces everything to stable storage and closes the file.
func (s *logStore) Close() error {
	close(s.stop)
	s.done.Wait()
	err := s.db.Sync()
	return errors.Join(err, s.db.Close())
}

func indexKey(i uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], i)
	return k[:]
}

func (s *logStore) FirstIndex() (uint64, error) {
	var i uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

func (s *logStore) LastIndex() (uint64, error) {
	var i uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

func (s *logStore) GetLog(index uint64, l *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return decodeLog(v, l)
	})
}

func (s *logStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *logStore) StoreLogs(logs []*raft.Log) error {
	var buf []byte
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			buf = encodeLog(buf[:0], l)
			// bbolt keeps the value until the transaction ends.
			if err := b.Put(indexKey(l.Index), append([]byte(nil), buf...)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *logStore) DeleteRange(lo, hi uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(indexKey(lo)); k != nil && binary.BigEndian.Uint64(k) <= hi; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// updateSynced runs fn in a write transaction that reaches stable storage
// whatever the policy.
func (s *logStore) updateSynced(fn func(tx *bolt.Tx) error) error {
	if err := s.db.Update(fn); err != nil {
		return err
	}
	if s.db.NoSync {
		return s.db.Sync()
	}
	return nil
}

func (s *logStore) Set(key, val []byte) error {
	return s.updateSynced(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketStable).Put(key, append([]byte(nil), val...))
	})
}

func (s *logStore) Get(key []byte) ([]byte, error) {
	var v []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket(bucketStable).Get(key))
		return nil
	})
	return v, err
}

func (s *logStore) SetUint64(key []byte, val uint64) error { return s.Set(key, indexKey(val)) }

func (s *logStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil || len(v) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(v), nil
}

// encodeLog encodes a log entry for raft.db: its fields in order, the
// data and extensions copied as they are.
func encodeLog(b []byte, l *raft.Log) []byte {
	b = binary.AppendUvarint(b, l.Index)
	b = binary.AppendUvarint(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.AppendVarint(b, l.AppendedAt.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	return append(b, l.Extensions...)
}

var errBadLog = errors.New("cluster: malformed log entry in raft.db")

// decodeLog decodes an entry that encodeLog wrote. b is bbolt's memory,
// valid only inside the transaction: the entry keeps copies.
func decodeLog(b []byte, l *raft.Log) error {
	d := decoder{b: b}
	l.Index = d.uvarint()
	l.Term = d.uvarint()
	l.Type = raft.LogType(d.byte())
	l.AppendedAt = time.Unix(0, d.varint())
	l.Data = bytes.Clone(d.bytes())
	l.Extensions = bytes.Clone(d.bytes())
	if d.err != nil {
		return errBadLog
	}
	return nil
}

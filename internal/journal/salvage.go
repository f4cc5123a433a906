package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// A salvage reads every intact record of damaged files into a machine:
// past a damaged region it looks for the next intact frame (length and
// CRC-32C) and goes on from there. Changes are replayed in the order of
// their numbers, so a deletion or a newer value after the damage wins over
// what precedes it, and the highest version read survives.
type salvage struct {
	m       *store.Machine
	snapSeq uint64 // the snapshot's seq: journal changes up to it are in it
	lastSeq uint64 // the last journal change read
	nodes   nodes

	kept    int64    // intact key and change records read
	regions []region // the damage found
	// dropped counts the changes known to be lost: the numbers missing
	// between the intact changes around a damaged region, and the keys a
	// snapshot's footer counts that it no longer holds.
	dropped int64
	// unbounded is set when damage runs to the end of the journal: how
	// many changes it held is not known.
	unbounded bool
	// named are the changes that damaged records still name (their frame
	// was readable, their checksum not): the keys whose latest state may
	// be lost.
	named []store.Change
	// floor is a version at least as high as any the damaged parts may
	// have held: the time their file was last written.
	floor hlc.Timestamp
}

// region is one damaged region of a file.
type region struct {
	file       string
	start, end int64
	reason     string // what is missing, where no bytes are damaged
}

func newSalvage() *salvage {
	return &salvage{m: store.New(), nodes: nodes{}}
}

// damaged records a damaged region of the open file f and parses what it
// can of the records in it, ignoring their checksums, to name their keys.
func (s *salvage) damaged(f *os.File, start, end int64) error {
	s.addRegion(f, region{start: start, end: end})
	for at := start; at+headerSize < end; {
		var h [headerSize]byte
		if _, err := f.ReadAt(h[:], at); err != nil {
			return err
		}
		l := int64(binary.LittleEndian.Uint32(h[:]))
		if l == 0 || at+headerSize+l > end {
			return nil
		}
		payload := make([]byte, l)
		if _, err := f.ReadAt(payload, at+headerSize); err != nil {
			return err
		}
		var c store.Change
		if decodeChange(payload, nodes{}, &c) != nil {
			return nil
		}
		if c.Key != "" {
			s.named = append(s.named, c)
		}
		at += headerSize + l
	}
	return nil
}

// snapshot reads the snapshot file name. It returns the snapshot's seq
// (from its header, or from its name when the header is damaged).
func (s *salvage) snapshot(name string, nameSeq uint64) error {
	f, size, err := openSized(name)
	if err != nil {
		return err
	}
	defer f.Close()
	s.snapSeq = nameSeq
	var keys int64
	footer := int64(-1) // the key count of the footer, if it was read
	accept := func(p []byte) bool {
		if p[0] == recSnapshotFooter {
			return true
		}
		var c store.Change
		return decodeChange(p, nodes{}, &c) == nil && !c.Deleted && c.Key != ""
	}
	first := true
	err = s.records(f, size, 0, accept, func(p []byte) error {
		if first {
			first = false
			if h, err := decodeHeader(p, recSnapshotHeader); err == nil {
				s.m.Replay(&store.Change{Seq: h.seq, Version: h.maxVersion})
				s.snapSeq = h.seq
				return nil
			}
		}
		if p[0] == recSnapshotFooter {
			if count, v, err := decodeSnapshotFooter(p, s.nodes); err == nil {
				footer = int64(count)
				s.m.Replay(&store.Change{Seq: s.snapSeq, Version: v})
			}
			return nil
		}
		var c store.Change
		if err := decodeChange(p, s.nodes, &c); err != nil || c.Deleted || c.Key == "" {
			return errMalformed
		}
		s.m.Replay(&c)
		keys++
		s.kept++
		return nil
	})
	if err != nil {
		return err
	}
	s.m.Replay(&store.Change{Seq: s.snapSeq})
	s.lastSeq = s.snapSeq
	if footer > keys {
		s.dropped += footer - keys
	} else if footer < 0 {
		s.unbounded = true
		s.missing(f, size, "the snapshot ends before its footer")
	}
	return nil
}

// segment reads the journal segment name, whose first change is first;
// next is the first change of the segment after it, 0 for the last.
func (s *salvage) segment(name string, first, next uint64) error {
	f, size, err := openSized(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if first > 0 && s.lastSeq < first-1 {
		s.lastSeq = first - 1
	}
	gapFrom := s.lastSeq // changes after it, up to the next intact one, are lost
	inGap := false
	countGap := func(upTo uint64) {
		if inGap && upTo > max(gapFrom, s.snapSeq)+1 {
			s.dropped += int64(upTo - max(gapFrom, s.snapSeq) - 1)
		}
		inGap = false
	}
	accept := func(p []byte) bool {
		var c store.Change
		if decodeChange(p, nodes{}, &c) != nil || c.Seq <= s.lastSeq {
			return false
		}
		return next == 0 || c.Seq < next
	}
	headerDone := false
	err = s.records(f, size, 0, func(p []byte) bool {
		if !headerDone && p[0] == recSegmentHeader {
			return true
		}
		return accept(p)
	}, func(p []byte) error {
		if !headerDone {
			headerDone = true
			if _, err := decodeHeader(p, recSegmentHeader); err == nil {
				return nil
			}
		}
		var c store.Change
		if err := decodeChange(p, s.nodes, &c); err != nil || c.Seq <= s.lastSeq {
			return errMalformed
		}
		countGap(c.Seq)
		if c.Seq > s.snapSeq {
			s.m.Replay(&c)
		}
		s.lastSeq = c.Seq
		s.kept++
		return nil
	}, func() {
		inGap, gapFrom = true, s.lastSeq
	})
	if err != nil {
		return err
	}
	if inGap {
		if next != 0 {
			countGap(next)
			s.lastSeq = next - 1
		} else {
			s.unbounded = true
		}
	} else if next != 0 && s.lastSeq+1 < next {
		// The segment ends early: the changes up to the next are gone.
		s.missing(f, size, fmt.Sprintf("changes %d to %d are missing at its end", s.lastSeq+1, next-1))
		s.dropped += int64(next - 1 - max(s.lastSeq, s.snapSeq))
		s.lastSeq = next - 1
	}
	return nil
}

// missing records damage that is not in any byte but in what a file
// lacks: at offset at of f, for the reason given.
func (s *salvage) missing(f *os.File, at int64, reason string) {
	s.addRegion(f, region{start: at, end: at, reason: reason})
}

// addRegion records r, a damage of the open file f, and raises the floor
// to the time f was last written.
func (s *salvage) addRegion(f *os.File, r region) {
	r.file = f.Name()
	s.regions = append(s.regions, r)
	if info, err := f.Stat(); err == nil {
		s.floor = maxVersionOf(s.floor, hlc.Timestamp{Wall: info.ModTime().UnixMilli()})
	}
}

// records reads the framed records of the open file f (of size bytes)
// from offset from and hands each intact one to use. At a record that is
// damaged, or that use refuses, it records the damage, calls onDamage if
// given, and goes on at the next intact record that accept takes.
func (s *salvage) records(f *os.File, size, from int64, accept func([]byte) bool, use func([]byte) error, onDamage ...func()) error {
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	rr := newRecordReader(f)
	rr.offset = from
	for {
		at := rr.offset
		payload, err := rr.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			if uerr := use(payload); uerr == nil {
				continue
			} else if !errors.Is(uerr, errMalformed) {
				return uerr
			}
		} else if !errors.Is(err, errTorn) && !errors.Is(err, errZeros) && !errors.Is(err, errChecksum) && !isLengthError(err) {
			return fmt.Errorf("journal: %s: %w", f.Name(), err)
		}
		next, serr := nextIntact(f, size, at+1, accept)
		if serr != nil {
			return fmt.Errorf("journal: %w", serr)
		}
		end := next
		if next < 0 {
			end = size
		}
		if err := s.damaged(f, at, end); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		for _, cb := range onDamage {
			cb()
		}
		if next < 0 {
			return nil
		}
		if _, err := f.Seek(next, io.SeekStart); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		rr = newRecordReader(f)
		rr.offset = next
	}
}

// errRecordLength reports a record length beyond any record.
var errRecordLength = errors.New("beyond any record")

func isLengthError(err error) bool { return errors.Is(err, errRecordLength) }

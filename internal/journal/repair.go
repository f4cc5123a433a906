package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/dssio/dss/internal/store"
)

// Report says what Repair found, kept and dropped.
type Report struct {
	// Actions says what Repair did, a line each; none when nothing is
	// damaged.
	Actions []string
	// Damage names each damaged region: file, offsets and size.
	Damage []string
	// RecordsKept counts the intact records read: the snapshot's keys
	// and the journal's changes.
	RecordsKept int64
	// RecordsDropped counts the records known to be lost: the change
	// numbers missing between the intact changes around the damage, and
	// the keys a damaged snapshot's footer counts that it no longer
	// holds. With DroppedUnknown set, more may be lost: damage ran to the
	// end of the journal or took the snapshot's footer.
	RecordsDropped int64
	DroppedUnknown bool
	DamagedBytes   int64
	// KeysKept counts the keys of the repaired state.
	KeysKept int
	// KeysDropped are the keys that damaged records still name and whose
	// state they held is not in the repaired state: such a key is missing,
	// or holds an older value, or is back although it was deleted.
	KeysDropped []string
	// Aside is the directory that holds the files as they were.
	Aside string
}

// Repair makes a damaged data directory usable again, keeping every
// intact record. It reads the newest snapshot and the journal segments
// after it; past each damaged region it goes on at the next intact record
// (records are framed with their length and a CRC-32C). From what it
// read it writes a new snapshot, which replaces the snapshot and the
// segments: they are kept, as they were, in a new directory damaged-<time>
// inside dir. Changes are applied in the order of their numbers, so a
// deletion after the damage stays a deletion, and the highest version
// read survives; versions issued later are also kept above the time the
// damaged files were last written. Repair changes nothing when nothing is
// damaged. The server must not be running.
func Repair(dir string) (*Report, error) {
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	files, err := listDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	s := newSalvage()
	var snapSeq uint64
	if n := len(files.snapshots); n > 0 {
		snapSeq = files.snapshots[n-1]
		if err := s.snapshot(filepath.Join(dir, snapshotName(snapSeq)), snapSeq); err != nil {
			return nil, err
		}
		snapSeq = s.snapSeq
	}
	for i, first := range files.segments {
		var next uint64
		if i+1 < len(files.segments) {
			next = files.segments[i+1]
			if next <= snapSeq+1 {
				continue // every change of it is in the snapshot
			}
		}
		if err := s.segment(filepath.Join(dir, segmentName(first)), first, next); err != nil {
			return nil, err
		}
	}
	r := s.report()
	if len(s.regions) == 0 {
		return r, nil
	}
	m := s.m
	if m.MaxVersion().Before(s.floor) {
		m.Replay(&store.Change{Seq: m.Seq(), Version: s.floor})
	}
	if err := r.replace(dir, files, m); err != nil {
		return r, err
	}
	return r, nil
}

// report sums up the salvage.
func (s *salvage) report() *Report {
	r := &Report{
		RecordsKept:    s.kept,
		RecordsDropped: s.dropped,
		DroppedUnknown: s.unbounded,
		KeysKept:       s.m.Len(),
	}
	for _, g := range s.regions {
		r.DamagedBytes += g.end - g.start
		if g.reason != "" {
			r.Damage = append(r.Damage, fmt.Sprintf("%s at offset %d: %s", filepath.Base(g.file), g.start, g.reason))
			continue
		}
		r.Damage = append(r.Damage, fmt.Sprintf("%s: %d damaged bytes at offsets %d to %d", filepath.Base(g.file), g.end-g.start, g.start, g.end))
	}
	if len(s.named) == 0 {
		return r
	}
	// A named key is dropped unless the state read holds a later change
	// of it.
	latest := make(map[string]uint64, len(s.named))
	for _, c := range s.named {
		latest[c.Key] = max(latest[c.Key], c.Seq)
	}
	kept := make(map[string]bool, len(latest))
	for c := range s.m.Entries() {
		if seq, ok := latest[c.Key]; ok && c.Seq >= seq {
			kept[c.Key] = true
		}
	}
	for k := range latest {
		if !kept[k] {
			r.KeysDropped = append(r.KeysDropped, k)
		}
	}
	sort.Strings(r.KeysDropped)
	return r
}

// replace writes a snapshot of m into dir in place of the segments and
// snapshots of files, which it keeps in a new directory damaged-<time>.
// Until the new snapshot is in place the old files are where they were;
// after it, a crash leaves the old segments behind, which the server
// skips or refuses to start with (then Repair runs again).
func (r *Report) replace(dir string, files dirFiles, m *store.Machine) error {
	tmp, final, size, err := writeSnapshotFile(dir, m)
	if err != nil {
		return fmt.Errorf("journal: writing the repaired snapshot: %w", err)
	}
	aside, err := newAsideDir(dir, "damaged")
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("journal: %w", err)
	}
	r.Aside = aside
	var old []string
	for _, seq := range files.snapshots {
		old = append(old, snapshotName(seq))
	}
	for _, seq := range files.segments {
		old = append(old, segmentName(seq))
	}
	for _, name := range old {
		if err := keepAside(filepath.Join(dir, name), aside); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("journal: keeping %s: %w", name, err)
		}
	}
	if err := syncDir(aside); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("journal: %w", err)
	}
	r.Actions = append(r.Actions, fmt.Sprintf("kept the journal and snapshot files as they were in %s (%d files)", aside, len(old)))
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	r.Actions = append(r.Actions, fmt.Sprintf("wrote %s: %d keys up to change %d (%d bytes)", filepath.Base(final), m.Len(), m.Seq(), size))
	for _, name := range old {
		if filepath.Join(dir, name) == final {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	r.Actions = append(r.Actions, fmt.Sprintf("removed the replaced files from %s (their copies are in %s)", dir, aside))
	return nil
}

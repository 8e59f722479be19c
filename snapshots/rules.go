package snapshots

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrIncompatible is returned (wrapped) for a snapshot written by another
// read-model format: the current models would read it wrongly, so it is
// ignored and the read model is rebuilt from the log instead.
var ErrIncompatible = errors.New("lore: snapshot format differs from the current read models")

// ErrStale is returned (wrapped) for a snapshot whose sequence no longer
// meets the log: events between it and the log's first sequence are gone
// (or the snapshot is ahead of the log it would follow).
var ErrStale = errors.New("lore: snapshot does not meet the log")

// ErrNoSnapshot is returned when no compatible, valid snapshot exists.
var ErrNoSnapshot = errors.New("lore: no usable snapshot")

// Info describes one stored snapshot.
type Info struct {
	// Name is the object's name in the bucket.
	Name string `json:"name"`
	// LastSeq is the last stream sequence the read model holds: a replica
	// restored from it consumes from LastSeq+1.
	LastSeq uint64 `json:"last_seq"`
	// Format is the read-model format (projector.FormatVersion) it holds.
	Format string `json:"format"`
	// Created is when the checkpoint was taken.
	Created time.Time `json:"created"`
	// Replica names the projector replica it was taken from.
	Replica string `json:"replica"`
	// Size is the stored size in bytes (the tar archive).
	Size uint64 `json:"size"`
}

// Check tells whether a snapshot can seed a replica of the current models
// (format) on a log whose sequences run from first to last. It returns nil,
// or an error wrapping ErrIncompatible or ErrStale with the reason.
//
// Rules: the format must equal the current one; LastSeq must be at least
// first-1 (nothing between the snapshot and the log's first event is
// missing) and at most last (a snapshot ahead of the log belongs to another
// log).
func Check(s Info, format string, first, last uint64) error {
	if s.Format != format {
		return fmt.Errorf("%w: snapshot %q has %q, models need %q", ErrIncompatible, s.Name, s.Format, format)
	}
	if first > 0 && s.LastSeq+1 < first {
		return fmt.Errorf("%w: snapshot %q ends at seq %d, the log starts at %d", ErrStale, s.Name, s.LastSeq, first)
	}
	if s.LastSeq > last {
		return fmt.Errorf("%w: snapshot %q ends at seq %d, beyond the log's last seq %d", ErrStale, s.Name, s.LastSeq, last)
	}
	return nil
}

// Newest returns the snapshot a new replica should start from: among those
// that pass Check, the one holding the most of the log (highest LastSeq),
// the most recent on a tie. ok is false when none passes.
func Newest(ss []Info, format string, first, last uint64) (best Info, ok bool) {
	for _, s := range ss {
		if Check(s, format, first, last) != nil {
			continue
		}
		if !ok || s.LastSeq > best.LastSeq || (s.LastSeq == best.LastSeq && s.Created.After(best.Created)) {
			best, ok = s, true
		}
	}
	return best, ok
}

// SortNewestFirst orders snapshots by creation time, newest first (by name
// on a tie, so the order is total).
func SortNewestFirst(ss []Info) {
	sort.Slice(ss, func(i, j int) bool {
		if !ss[i].Created.Equal(ss[j].Created) {
			return ss[i].Created.After(ss[j].Created)
		}
		return ss[i].Name > ss[j].Name
	})
}

// Expired returns the snapshots retention deletes: all but the keep newest
// by creation time. keep <= 0 keeps everything.
func Expired(ss []Info, keep int) []Info {
	if keep <= 0 || len(ss) <= keep {
		return nil
	}
	sorted := append([]Info(nil), ss...)
	SortNewestFirst(sorted)
	return sorted[keep:]
}

// ObjectName names a snapshot object: sortable by sequence, then time, and
// unique per replica and instant.
func ObjectName(lastSeq uint64, created time.Time, replica string) string {
	return fmt.Sprintf("seq-%020d-%s-%s", lastSeq, created.UTC().Format("20060102T150405.000000000Z"), replica)
}

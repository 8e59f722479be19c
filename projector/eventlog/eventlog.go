// Package eventlog is the read model of the log itself: how many events of
// each type and project were folded, the newest event time, and a hash chain
// over the folded event ids in stream order. The chain makes any event
// folded twice, skipped or reordered visible: two stores that folded the
// same log hold the same chain.
package eventlog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Name is the model's key prefix. NB: must not change.
const Name = "eventlog"

// Keys. NB: must not change.
const (
	keyTotal    = "total"
	keyChain    = "chain"
	keyLastTime = "last-time"
	prefixType  = "type/"
	prefixProj  = "project/"
)

// Model folds every event into counts and the chain.
type Model struct{}

var _ projector.AcceptingModel = Model{}

func (Model) Name() string { return Name }

// AcceptsEveryEvent implements projector.AcceptingModel: Fold returns
// its Tx's errors only.
func (Model) AcceptsEveryEvent() {}

// Version 2: last-time is the newest event time folded (was the time of the
// last event folded, which went backwards after a backfilled event).
func (Model) Version() int { return 2 }

// Fold counts the event and extends the chain.
func (Model) Fold(tx projector.Tx, ev *events.Event, _ events.Payload) error {
	if err := incr(tx, keyTotal); err != nil {
		return err
	}
	if err := incr(tx, prefixType+ev.Type); err != nil {
		return err
	}
	if err := incr(tx, prefixProj+ev.Project); err != nil {
		return err
	}
	prev, _, err := tx.Get([]byte(keyChain))
	if err != nil {
		return err
	}
	// The link is sha256(prev || id), hashed from a buffer on the stack
	// (ids are at most 128 bytes).
	var buf [sha256.Size + 128]byte
	sum := sha256.Sum256(append(append(buf[:0], prev...), ev.ID...))
	if err := tx.Set([]byte(keyChain), sum[:]); err != nil {
		return err
	}
	// INVARIANT: last-time is the newest event time folded so far (the
	// time of the latest thing that happened), never the time of the last
	// event appended: writers backfill, so it never goes backwards.
	cur, ok, err := tx.Get([]byte(keyLastTime))
	if err != nil {
		return err
	}
	if ok {
		if t, perr := time.Parse(time.RFC3339Nano, string(cur)); perr == nil && !ev.Time.After(t) {
			return nil
		}
	}
	return tx.Set([]byte(keyLastTime), []byte(ev.Time.UTC().Format(time.RFC3339Nano)))
}

func incr(tx projector.Tx, key string) error {
	k := []byte(key)
	v, _, err := tx.Get(k)
	if err != nil {
		return err
	}
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n+1)
	return tx.Set(k, b[:]) // Set copies
}

// Stats is what the model answers.
type Stats struct {
	Total     uint64            `json:"total"`
	ByType    map[string]uint64 `json:"by_type"`
	ByProject map[string]uint64 `json:"by_project"`
	// LastTime is the newest event time folded (RFC 3339, UTC): the latest
	// moment anything happened, whatever order the events were appended in.
	LastTime string `json:"last_event_time,omitempty"`
	Chain    string `json:"chain"`
}

// Read returns the model's stats.
func Read(r projector.Reader) (Stats, error) {
	s := Stats{ByType: map[string]uint64{}, ByProject: map[string]uint64{}}
	err := r.Scan(nil, func(k, v []byte) error {
		key := string(k)
		switch {
		case key == keyTotal:
			s.Total = binary.BigEndian.Uint64(v)
		case key == keyChain:
			s.Chain = hex.EncodeToString(v)
		case key == keyLastTime:
			s.LastTime = string(v)
		case strings.HasPrefix(key, prefixType):
			s.ByType[key[len(prefixType):]] = binary.BigEndian.Uint64(v)
		case strings.HasPrefix(key, prefixProj):
			s.ByProject[key[len(prefixProj):]] = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("read eventlog: %w", err)
	}
	return s, nil
}

// Format renders stats for people.
func Format(s Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "events folded: %d\n", s.Total)
	if s.LastTime != "" {
		fmt.Fprintf(&b, "newest event time: %s\n", humanTime(s.LastTime))
	}
	for _, group := range []struct {
		title string
		m     map[string]uint64
	}{{"by type", s.ByType}, {"by project", s.ByProject}} {
		keys := make([]string, 0, len(group.m))
		for k := range group.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%s:\n", group.title)
		for _, k := range keys {
			fmt.Fprintf(&b, "  %-32s %d\n", k, group.m[k])
		}
	}
	fmt.Fprintf(&b, "chain: %s\n", s.Chain)
	return b.String()
}

// humanTime renders a stored RFC 3339 time for people as every lore table
// does: RFC 3339 UTC to the second.
func humanTime(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

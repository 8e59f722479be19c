package knowledge

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/loredev/lore/projector"
)

// Inactive entries in the fold's pool states (poolState): a pool keeps
// every entry it ever had, and a submission compares its lesson with the
// inactive ones only for near-duplicates — which one is first, whether it
// is removed from view, whether any is near at all (poolScan.nearInactive,
// nearAny). What that comparison reads of an inactive entry is its bigram
// set and its id, so the state holds of it only its id and its bigram
// hashes (archived): the exact Jaccard needs the bigram strings where two
// hashes are equal, and those are read from the entry's stored summary,
// only for an entry whose hashes make it a near-duplicate (nearArchived).

// archived is the compact form of an inactive entry's summary.
type archived struct {
	id      string
	bghash  []uint64 // features.bghash: sorted
	removed bool     // summary.removed
}

// archivedOf is the compact form of s, held under key.
func archivedOf(key string, s *summary) archived {
	return archived{id: idOfKey(key, s.ID), bghash: s.bghash, removed: s.removed()}
}

// idOfKey returns id, sharing key's bytes when key ends with it (a
// summary's key does: summaryKey).
func idOfKey(key, id string) string {
	if strings.HasSuffix(key, id) {
		return key[len(key)-len(id):]
	}
	return strings.Clone(id)
}

// decodeArchived decodes the compact form of the summary v held under key:
// it reads the record's head only (summary.encode puts the flags, the id
// and the bigram hashes first) and copies what it keeps.
func decodeArchived(key string, v []byte) (archived, error) {
	d := sumDecoder[[]byte]{s: v}
	if d.byte() != summaryFormat {
		return archived{}, errSummary
	}
	flags := d.byte()
	for range 4 { // created_seq, shown, helpful, harmful
		d.uvarint()
	}
	id := d.str()
	n := d.cursor()
	if d.bad || n*8 > len(d.s)-d.i {
		return archived{}, errSummary
	}
	a := archived{removed: flags&flagRemoved != 0}
	if n > 0 {
		a.bghash = make([]uint64, n)
		for i := range a.bghash {
			a.bghash[i] = binary.LittleEndian.Uint64(d.s[d.i+8*i:])
		}
	}
	a.id = idOfKey(key, string(id))
	return a, nil
}

// nearArchived is nearFeatures(lf, the features of the inactive entry in
// slot, t): decided from the hashes when they suffice (the hashes' Jaccard
// is at least the bigrams', nearDuplicate), else from the bigrams of its
// summary read from r, which holds it (poolState's invariant).
func (p *poolState) nearArchived(r projector.Reader, lf features, slot int32, t float64) (bool, error) {
	hs := p.slotHash[slot]
	if len(lf.bghash) == 0 || len(hs) == 0 {
		j := 0.0 // as jaccardFeatures: no bigram in common
		if len(lf.bghash) == 0 && len(hs) == 0 {
			j = 1
		}
		return j >= t, nil
	}
	if hashJaccard(lf.bghash, hs) < t {
		return false, nil
	}
	key := p.slotKey[slot]
	v, ok, err := r.Get([]byte(key))
	if err != nil {
		return false, fmt.Errorf("knowledge: read summary %s: %w", key, err)
	}
	if !ok {
		return false, fmt.Errorf("%w: %s absent from the store its pool state holds", errSummary, key)
	}
	d := sumDecoder[[]byte]{s: v}
	d.byte()
	d.byte()
	for range 4 {
		d.uvarint()
	}
	d.str()
	j := jaccardPacked(lf, &d)
	if d.bad {
		return false, fmt.Errorf("%w: %s", errSummary, key)
	}
	return j >= t, nil
}

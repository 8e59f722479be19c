package crossloop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

// Archived signatures. A pruned pattern leaves the search index and the
// merge lists of active patterns, but its signature stays known: it is
// listed in the merge lists of its type's archive namespace (archivedType),
// so that a candidate more than the threshold similar to it reinforces the
// archived record (or restores it) instead of minting a new pattern.
//
// Key layout (see index.go):
//
//	ix/m/~<type>/<key>   merge list of archived patterns (mergeEntry format)
//	ix/a/<pattern id>    the merge keys an archived pattern is listed under
//	                     (encodeList), so it can be removed on restore
//	ix/g/<pattern id>    its signature's bigrams (sigKey), as for an active
//	                     pattern (a pattern is one or the other)
//
// INVARIANT: a pattern is in the merge lists of its type (active) or in
// those of archivedType(type) (archived), never both; ix/a/<id> exists
// exactly when it is in the archived lists.
const prefArchivedKeys = "ix/a/"

// archivedType is the merge-list namespace of archived patterns of typ.
func archivedType(typ string) string { return "~" + typ }

// indexArchived lists an archived pattern's signature under its merge keys
// at threshold t.
func indexArchived(s Store, p *Pattern, t float64, m *memo) error {
	sg := m.signature(p.Signature(), t)
	seq, err := m.nextSeq(s)
	if err != nil {
		return err
	}
	// The signature is stored once (sigKey), as for an active pattern:
	// a merge check of the archived lists reads it from there.
	entry := mergeEntry(p.ID, seq, len(sg.bigrams), sg.sketch)
	if err := s.Set(sigKey(p.ID), encodeList(sg.bigrams)); err != nil {
		return err
	}
	for _, k := range sg.keys {
		if err := editList(s, mergeKey(archivedType(p.Type), k), p.ID, entry, m, false); err != nil {
			return err
		}
	}
	return s.Set([]byte(prefArchivedKeys+p.ID), encodeList(sg.keys))
}

// unindexArchived removes an archived pattern from the archived merge
// lists (no-op when absent).
func unindexArchived(s Store, typ, id string, m *memo) error {
	raw, ok, err := s.Get([]byte(prefArchivedKeys + id))
	if err != nil || !ok {
		return err
	}
	keys, err := decodeList(raw)
	if err != nil {
		return fmt.Errorf("archived keys of %s: %w", id, err)
	}
	for _, k := range keys {
		if err := editList(s, mergeKey(archivedType(typ), k), id, nil, m, false); err != nil {
			return err
		}
	}
	if err := s.Delete(sigKey(id)); err != nil {
		return err
	}
	return s.Delete([]byte(prefArchivedKeys + id))
}

// knownTarget is the pattern a candidate signature belongs to: the active
// one mergeTarget finds, else the archived one it would find among
// archived patterns. "" when none.
func (f *folder) knownTarget(typ, sig string, first bool) (id string, archived bool, err error) {
	id, err = f.mergeTarget(typ, sig, first)
	if err != nil || id != "" {
		return id, false, err
	}
	id, err = f.mergeTarget(archivedType(typ), sig, first)
	return id, id != "", err
}

// reconsider decides, after an archived pattern was reinforced at the
// event's time, whether it stays archived: it is restored when the prune
// rule in force (PruneDecision) would no longer archive it, announced by
// registry.pattern_restored/v1. It reports whether it restored it; the
// caller saves the head either way.
func (f *folder) reconsider(st *Stats, h *patternHead, cause string) (bool, error) {
	if !h.Archived {
		return false, nil
	}
	probe := h.Pattern
	probe.Archived = false
	if prune, _ := PruneDecision(&probe, f.cfg().Prune, f.t); prune {
		return false, nil
	}
	month, reason := h.ArchiveMonth, h.ArchiveReason
	if err := unindexArchived(f.tx, h.Type, h.ID, &f.mm); err != nil {
		return false, err
	}
	h.Archived, h.ArchiveMonth, h.ArchiveReason = false, "", ""
	st.Archived--
	st.ByType[h.Type]++
	if err := indexPattern(f.tx, st, &h.Pattern, f.cfg().SimilarityThreshold, &f.mm, true); err != nil {
		return false, err
	}
	f.tx.Emit(projector.Derived{Type: "registry.pattern_restored/v1", Project: f.ev.Project, Subject: h.ID,
		Key: h.ID, Data: events.PatternRestored{PatternID: h.ID, Month: month, PrunedFor: reason, Cause: cause}})
	return true, nil
}

// Imported patterns are known by the digest of their content
// (ImportDigest): imp/<digest> is set when one is folded, so the same
// pattern imported again (the same file, or the same pattern in another
// file) changes nothing, even when it was merged into another pattern.
const prefImported = "imp/"

// ImportDigest names an imported pattern by its content (as parsed from
// the file: the pattern's JSON, which is deterministic).
func ImportDigest(p *Pattern) (string, error) {
	_, d, err := ImportEncode(p)
	return d, err
}

// ImportEncode returns a pattern's JSON, as an import event carries it,
// and its ImportDigest (the digest of those bytes).
func ImportEncode(p *Pattern) (json.RawMessage, string, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, "", fmt.Errorf("digest of pattern %s: %w", p.ID, err)
	}
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:16]), nil
}

// ImportKnown reports whether importing p would change nothing: its
// content was imported before, or the registry holds its id. The import
// command and the fold decide with it.
func ImportKnown(r getter, p *Pattern) (bool, error) {
	d, err := ImportDigest(p)
	if err != nil {
		return false, err
	}
	return ImportKnownDigest(r, p.ID, d)
}

// ImportKnownDigest is ImportKnown of the pattern id with ImportDigest d.
func ImportKnownDigest(r getter, id, d string) (bool, error) {
	for _, k := range [][]byte{[]byte(prefImported + d), patternKey(id)} {
		if _, ok, err := r.Get(k); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// ImportEventID names the event importing patterns of these digests, so
// that the same patterns sent again are one event.
func ImportEventID(digests []string) string {
	h := sha256.New()
	for _, d := range digests {
		h.Write([]byte(d))
		h.Write([]byte{0})
	}
	return "imp-patterns-" + hex.EncodeToString(h.Sum(nil)[:16])
}

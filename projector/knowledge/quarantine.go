package knowledge

import (
	"strings"
	"time"
	"unicode"
)

// Quarantine and restore (SPEC §5): a quarantined entry is hidden from
// queries and injection but kept; restoring re-validates it.

// DefaultQuarantineReason is used when none is given.
const DefaultQuarantineReason = "Quarantined via lore knowledge quarantine"

// MaxReasonLen bounds a quarantine reason (UTF-16 code units).
const MaxReasonLen = 500

// CleanReason drops control characters and cuts the reason to 500 units.
func CleanReason(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	s, _ = TruncateUTF16(strings.TrimSpace(s), MaxReasonLen, "")
	return s
}

// Quarantine hides e and returns the fingerprint kept in the rejected read
// model (layer 3) while it is quarantined. It reports false, changing
// nothing, when e is already quarantined.
func Quarantine(e *Entry, reason, by string, now time.Time) (Rejected, bool) {
	if e.Status == StatusQuarantined {
		return Rejected{}, false
	}
	reason = CleanReason(reason)
	if reason == "" {
		reason = DefaultQuarantineReason
	}
	if by == "" {
		by = "user"
	}
	e.OriginalStatus, e.Status = e.Status, StatusQuarantined
	e.QuarantineReason, e.QuarantinedAt, e.ReportedBy, e.RestoreError = reason, now, by, ""
	e.UpdatedAt = now
	return Rejected{ID: e.ID, Tier: e.Tier, Project: e.Project, Lesson: e.Lesson, Category: e.Category,
		Tags: e.Tags, Reason: reason, Layer: LayerSemantic, Kind: RejectedQuarantine, At: now}, true
}

// Restore re-validates a quarantined entry against existing active lessons.
// Valid: the entry gets its original status back (candidate when unknown),
// its quarantine fields cleared and its warnings refreshed. Invalid: it stays
// quarantined with the reason in RestoreError. It reports whether it restored.
func Restore(e *Entry, existing []Existing, cfg Config, now time.Time) (Result, bool) {
	if e.Status != StatusQuarantined {
		return Result{Valid: true}, false
	}
	res := Result{Valid: true}
	if cfg.ValidationEnabled {
		res = Validate(e.Lesson, existing, Meta{Category: e.Category, Scope: e.Scope, Confidence: e.Confidence,
			Tags: e.Tags})
	}
	if !res.Valid {
		e.RestoreError, e.UpdatedAt = res.Reason, now
		return res, false
	}
	e.Status = e.OriginalStatus
	if e.Status == "" || e.Status == StatusQuarantined {
		e.Status = StatusCandidate
	}
	e.OriginalStatus, e.QuarantineReason, e.QuarantinedAt, e.ReportedBy, e.RestoreError = "", "", time.Time{}, "", ""
	e.Warnings, e.UpdatedAt = res.Warnings, now
	return res, true
}

// Rejected kinds. NB: must not change.
const (
	RejectedValidation = "validation" // a submission refused by the validator
	RejectedQuarantine = "quarantine" // fingerprint of a quarantined entry (removed on restore)
	RejectedImport     = "import"     // a rejected line read from a file
	RejectedDuplicate  = "duplicate"  // near-duplicate of a quarantined entry
)

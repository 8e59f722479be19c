// Package projector is lore's read side: a runtime that drives a consumer of
// the log, folds each event into Pebble read models and commits each batch
// together with the stream sequence it has reached.
//
// A read model is a Model: a name (its key prefix), a version, and a Fold.
// Folds are deterministic: the only clock they see is the event's time; they
// do no I/O but through the Tx they are given.
package projector

import (
	"errors"

	"github.com/loredev/lore/events"
)

// Reader reads one read model's keys. Keys are relative to the model's
// prefix; a model never sees another model's keys.
type Reader interface {
	// Get returns the value at key; ok is false when absent. The caller
	// must not modify the returned slice (it may be the batch's own copy);
	// Set copies what it is given.
	Get(key []byte) (value []byte, ok bool, err error)
	// Scan calls fn for every key with the given prefix, in key order. The
	// slices are valid only during the call. Returning ErrStopScan from fn
	// ends the scan without error.
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// ErrStopScan ends a Scan early without error.
var ErrStopScan = errors.New("lore: stop scan")

// Tx is what a fold sees while folding one event: reads see the writes of
// this event and of every event folded before it, committed or not.
//
// INVARIANT: the writes of an event whose Fold returns an error are
// discarded, so a poison event leaves no trace in the read model.
type Tx interface {
	Reader
	Set(key, value []byte) error
	Delete(key []byte) error
	// Emit announces a derived event caused by the event being folded. It is
	// written to an outbox in the same batch and published once after the
	// commit; during a rebuild or an audit replay it does nothing.
	Emit(d Derived)
	// Seq is the stream sequence of the event being folded.
	Seq() uint64
}

// Derived is an announcement of a state transition (a promotion, an
// inversion, a deprecation, an archive) caused by one folded event.
type Derived struct {
	// Type is a derived kind of the catalogue, "pattern.inverted/v1".
	Type    string
	Project string
	// Subject is the aggregate id the transition is about.
	Subject string
	// Key distinguishes several announcements of one cause (for instance
	// "maturity:proven"); with the cause's sequence it forms the message id.
	Key  string
	Data any
}

// Model is one read model.
type Model interface {
	// Name is the model's key prefix and its name in queries.
	// NB: must not change: a rename orphans the stored read model.
	Name() string
	// Version changes whenever the fold's output for the same log changes;
	// a stored read model of another version is rebuilt from the log.
	Version() int
	// Fold applies one event. data is the decoded, upcast payload. A
	// returned error marks the event as poison: its writes are discarded,
	// it goes to the dead-letter stream with the error as reason, and the
	// projector moves on. Errors from the Tx itself (storage failures) are
	// not poison: return them wrapped and the runtime stops and retries.
	Fold(tx Tx, ev *events.Event, data events.Payload) error
}

// TypedModel is a Model that folds events of some kinds only. An audit
// as of a time folds such a model with only the models whose refusals can
// reach it (FoldSet).
type TypedModel interface {
	Model
	// Folds reports whether Fold does anything with an event whose payload
	// is data. It is decided by data's Go type alone (one per event kind);
	// for an event it does not fold, Fold reads nothing, writes nothing,
	// announces nothing and returns nil, whatever the store holds.
	Folds(data events.Payload) bool
}

// AcceptingModel is a Model whose Fold refuses no event: it returns only
// the errors of its Tx (storage failures), so no other model's state depends
// on what it folds.
type AcceptingModel interface {
	Model
	// AcceptsEveryEvent marks the promise; it does nothing.
	AcceptsEveryEvent()
}

// Preparer is a Model with work that depends on an event's payload alone
// (a pure function of its content, such as a lesson's text features):
// Prepare does it ahead of the fold, on the goroutines that decode the
// log, so that the fold, one event after another, finds it done.
//
// REQUIRES: Prepare reads and writes no store and only fills caches keyed
// by content: the fold gives the same result whether Prepare ran or not.
type Preparer interface {
	Model
	Prepare(data events.Payload)
}

// preparer calls the Prepare of each Preparer among models (nil when none
// is). A panic in one is the fold's to report (as poison, when the fold
// meets it again): it is recovered here and the event goes on.
func preparer(models []Model) func(events.Payload) {
	var ps []Preparer
	for _, m := range models {
		if p, ok := m.(Preparer); ok {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	return func(data events.Payload) {
		defer func() { _ = recover() }()
		for _, p := range ps {
			p.Prepare(data)
		}
	}
}

// PureRefuser is a TypedModel whose Fold refuses an event exactly when
// Refuses does: a function of the event alone, whatever the store holds
// (besides the errors of its Tx and of a corrupt store). A fold set that
// needs its refusals folds Refuses instead of the model (FoldSet).
type PureRefuser interface {
	TypedModel
	// Refuses returns the error Fold would refuse the event with, nil
	// when Fold would fold it; it reads and writes nothing.
	Refuses(ev *events.Event, data events.Payload) error
}

package projector

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// modelTx is the Tx of one model while one event folds.
type modelTx struct{ l *lane }

var _ Tx = modelTx{}

func (t modelTx) full(key []byte) string { return string(t.l.prefix) + string(key) }

func (t modelTx) Get(key []byte) ([]byte, bool, error) {
	k := t.full(key)
	if v, ok := t.l.pending(k); ok {
		return v.v, !v.del, nil
	}
	return dbReader{r: t.l.store.db, prefix: t.l.prefix}.Get(key)
}

func (t modelTx) Set(key, value []byte) error {
	t.l.write(t.full(key), overlayVal{v: append([]byte(nil), value...)})
	return nil
}

func (t modelTx) Delete(key []byte) error {
	t.l.write(t.full(key), overlayVal{del: true})
	return nil
}

func (t modelTx) Emit(d Derived) { t.l.emits = append(t.l.emits, d) }

func (t modelTx) Seq() uint64 { return t.l.seq }

func (t modelTx) live() bool { return t.l.live }

// LiveFold reports whether tx folds into the live store (the runtime's
// folder, which announces), rather than into a replay's store (a rebuild)
// or an audit's copy. A model may keep what it caches between events for
// the live store first: the folds of other stores read the same model at
// other states, and should not push the live store's out.
func LiveFold(tx Tx) bool {
	l, ok := tx.(interface{ live() bool })
	return ok && l.live()
}

// Scan merges the committed keys with the uncommitted writes, in key order.
func (t modelTx) Scan(prefix []byte, fn func(k, v []byte) error) error {
	full := append(append([]byte{}, t.l.prefix...), prefix...)
	// The batch's keys are listed before the walk: fn may write.
	oks := t.l.pendingKeys(full)
	it, err := t.l.store.db.NewIter(&pebble.IterOptions{LowerBound: full, UpperBound: prefixEnd(full)})
	if err != nil {
		return fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	defer it.Close()
	call := func(k []byte, v []byte) error {
		err := fn(k[len(t.l.prefix):], v)
		return err
	}
	it.First()
	i := 0
	for it.Valid() || i < len(oks) {
		var err error
		switch {
		case i < len(oks) && (!it.Valid() || bytes.Compare([]byte(oks[i]), it.Key()) <= 0):
			k := oks[i]
			if it.Valid() && bytes.Equal([]byte(k), it.Key()) {
				it.Next() // shadowed by the batch
			}
			i++
			if ov, _ := t.l.pending(k); !ov.del {
				err = call([]byte(k), ov.v)
			}
		default:
			v, verr := it.ValueAndErr()
			if verr != nil {
				return fmt.Errorf("%w: iter value: %v", ErrStorage, verr)
			}
			err = call(it.Key(), v)
			it.Next()
		}
		if err != nil {
			if errors.Is(err, ErrStopScan) {
				return nil
			}
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	return nil
}

// pending is k's uncommitted value in the lane: the batch folding, else
// the batch being written (CommitAsync); ok is false when neither holds k.
func (l *lane) pending(k string) (overlayVal, bool) {
	if v, ok := l.batch.get(k); ok {
		return v, true
	}
	if l.writing != nil {
		return l.writing.get(k)
	}
	return overlayVal{}, false
}

// pendingKeys returns the keys with prefix of the lane's uncommitted
// writes (both batches), in key order, each once.
func (l *lane) pendingKeys(prefix []byte) []string {
	a := l.batch.keysWithPrefix(prefix)
	if l.writing == nil {
		return a
	}
	b := l.writing.keysWithPrefix(prefix)
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default: // in both
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

package projector

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrFutureFormat is returned when a store holds a read-model format written
// by a newer lore than this one: it is neither read nor wiped. The message
// names both formats and what to do.
var ErrFutureFormat = errors.New("lore: read model from a newer lore")

// storeLayout is the version of the store's own key layout (sys/ keys, the
// model prefix), the "store=N" part of a format. NB: must not change but by
// a bump, which makes older lore refuse the store.
const storeLayout = 2 // 2: the index of folded event ids (sys/id/)

// FormatVersion returns the read-model format a set of models writes: the
// store's own layout version and every model's name and version, as
// "store=1;learning=3;knowledge=2". NB: must not change shape: it reaches
// disk (sys/version) and snapshots, and older lore parses it (FormatNewer).
func FormatVersion(models []Model) string {
	v := "store=" + strconv.Itoa(storeLayout)
	for _, m := range models {
		v += fmt.Sprintf(";%s=%d", m.Name(), m.Version())
	}
	return v
}

// format is a parsed FormatVersion.
type format struct {
	store  int
	models map[string]int
}

// parseFormat parses "store=N;name=V;...". ok is false when the text has
// another shape (it then cannot be compared and counts as unknown).
func parseFormat(s string) (f format, ok bool) {
	parts := strings.Split(s, ";")
	k, v, found := strings.Cut(parts[0], "=")
	if !found || k != "store" {
		return f, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return f, false
	}
	f = format{store: n, models: map[string]int{}}
	for _, p := range parts[1:] {
		k, v, found := strings.Cut(p, "=")
		if !found || k == "" {
			return f, false
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, false
		}
		f.models[k] = n
	}
	return f, true
}

// FormatNewer reports whether the stored format have was written by a lore
// newer than the one writing want, and why. A format is newer when
//   - its store layout version is higher than want's, or
//   - any model's version is higher than want's model of the same name, or
//   - it holds a model want does not know (a model added later), or
//   - it cannot be parsed (a shape this lore does not know).
//
// Anything else — lower versions, models want adds or drops... — is older:
// the store is rebuilt from the log. An empty have (a new store) is never
// newer. Pure: the same answer for the same formats.
func FormatNewer(have, want string) (newer bool, why string) {
	if have == "" || have == want {
		return false, ""
	}
	h, ok := parseFormat(have)
	if !ok {
		return true, fmt.Sprintf("format %q is not one this lore can read", have)
	}
	w, ok := parseFormat(want)
	if !ok { // wiring bug: want comes from FormatVersion
		return true, fmt.Sprintf("this lore's own format %q is malformed", want)
	}
	if h.store > w.store {
		return true, fmt.Sprintf("store layout %d > %d", h.store, w.store)
	}
	names := make([]string, 0, len(h.models))
	for name := range h.models {
		names = append(names, name)
	}
	sort.Strings(names) // a stable reason
	for _, name := range names {
		wv, known := w.models[name]
		switch {
		case !known:
			return true, fmt.Sprintf("model %q is unknown to this lore", name)
		case h.models[name] > wv:
			return true, fmt.Sprintf("model %q version %d > %d", name, h.models[name], wv)
		}
	}
	return false, ""
}

// CheckFormat returns an error wrapping ErrFutureFormat when the store holds
// a format newer than models write (see FormatNewer); have is the stored
// format ("" for a new store). It changes nothing.
func CheckFormat(st *Store, models []Model) (have string, err error) {
	have, err = st.StoredVersion()
	if err != nil {
		return have, err
	}
	want := FormatVersion(models)
	if newer, why := FormatNewer(have, want); newer {
		dir := st.Dir()
		if dir == "" {
			dir = "the read model"
		}
		return have, fmt.Errorf("%w: store format %s is newer than this lore supports (%s): %s; upgrade lore or remove %s to rebuild",
			ErrFutureFormat, have, want, why, dir)
	}
	return have, nil
}

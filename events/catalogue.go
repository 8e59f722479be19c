package events

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	json "github.com/goccy/go-json"
)

// Payload is the Go type of one event type's data.
type Payload interface {
	// AggregateID is the id of the aggregate the event belongs to; it becomes
	// the last subject token (encoded) and the envelope's subject.
	AggregateID() string
}

// Checker is implemented by payloads with rules a JSON Schema cannot state
// (cross-field checks). Check runs after the schema, before append.
type Checker interface {
	Check() error
}

// Kind describes one event type and version of the catalogue.
type Kind struct {
	// Type is the versioned name, "outcome.recorded/v1".
	// NB: must not change; it is stored in every event of this kind.
	Type string
	// Aggregate is the aggregate's subject token ("bead", "pattern", "loop").
	// NB: must not change; it is part of the subject layout.
	Aggregate string
	// Derived marks events lore itself announces (promotions, inversions ...);
	// they live on lore.derived.> and are never appended by clients.
	Derived bool
	// Doc is one line for the README and `lore events types`.
	Doc string
	// New returns a pointer to a zero payload.
	New func() Payload
}

// Name is the type without its version: "outcome.recorded".
func (k Kind) Name() string { n, _ := SplitType(k.Type); return n }

// Version is the type's version number.
func (k Kind) Version() int { _, v := SplitType(k.Type); return v }

var catalogue = struct {
	sync.RWMutex
	kinds     map[string]Kind
	upcasters map[string]upcaster // keyed by the old type
}{kinds: map[string]Kind{}, upcasters: map[string]upcaster{}}

type upcaster struct {
	to string
	fn func(json.RawMessage) (json.RawMessage, error)
}

// Register adds a kind to the catalogue. It panics on a wiring bug (a
// duplicate or malformed type), never on input.
func Register(k Kind) {
	name, v := SplitType(k.Type)
	if name == "" || v < 1 || k.Aggregate == "" || k.New == nil {
		panic(fmt.Sprintf("events: malformed kind %+v", k))
	}
	if strings.ContainsAny(k.Aggregate, ".*> \t") {
		panic("events: aggregate token must be subject-safe: " + k.Aggregate)
	}
	catalogue.Lock()
	defer catalogue.Unlock()
	if _, dup := catalogue.kinds[k.Type]; dup {
		panic("events: duplicate kind " + k.Type)
	}
	catalogue.kinds[k.Type] = k
}

// RegisterUpcaster declares how an old version's data becomes the next
// version's. Upcasters are pure and chained at decode: v1 → v2 → v3. Old
// events are upcast when read, never rewritten in the log.
func RegisterUpcaster(from, to string, fn func(json.RawMessage) (json.RawMessage, error)) {
	catalogue.Lock()
	defer catalogue.Unlock()
	if _, dup := catalogue.upcasters[from]; dup {
		panic("events: duplicate upcaster from " + from)
	}
	catalogue.upcasters[from] = upcaster{to: to, fn: fn}
}

// Lookup returns the kind registered for a versioned type.
func Lookup(typ string) (Kind, bool) {
	catalogue.RLock()
	defer catalogue.RUnlock()
	k, ok := catalogue.kinds[typ]
	return k, ok
}

// Kinds returns the catalogue sorted by type.
func Kinds() []Kind {
	catalogue.RLock()
	defer catalogue.RUnlock()
	out := make([]Kind, 0, len(catalogue.kinds))
	for _, k := range catalogue.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// ResolveType accepts "outcome.recorded/v1" or a bare "outcome.recorded"
// (the newest registered version) and returns the versioned type.
func ResolveType(s string) (string, bool) {
	if _, ok := Lookup(s); ok {
		return s, true
	}
	best, bestV := "", 0
	for _, k := range Kinds() {
		if k.Name() == s && k.Version() > bestV {
			best, bestV = k.Type, k.Version()
		}
	}
	return best, best != ""
}

// SplitType splits "outcome.recorded/v1" into ("outcome.recorded", 1);
// a malformed type gives ("", 0).
func SplitType(typ string) (string, int) {
	name, ver, ok := strings.Cut(typ, "/v")
	if !ok || name == "" {
		return "", 0
	}
	v, err := strconv.Atoi(ver)
	if err != nil || v < 1 {
		return "", 0
	}
	return name, v
}

// Upcast brings an event's type and data to the newest version registered,
// applying upcasters in chain. The event is modified in place.
func Upcast(ev *Event) error {
	for range 64 { // bounded: a cycle of upcasters is a wiring bug
		catalogue.RLock()
		u, ok := catalogue.upcasters[ev.Type]
		catalogue.RUnlock()
		if !ok {
			return nil
		}
		data, err := u.fn(ev.Data)
		if err != nil {
			return fmt.Errorf("upcast %s to %s: %w", ev.Type, u.to, err)
		}
		ev.Type, ev.Data = u.to, data
	}
	return fmt.Errorf("upcast %s: too many steps", ev.Type)
}

// DecodeData upcasts ev and decodes its data into the kind's Go type.
func DecodeData(ev *Event) (Payload, error) {
	if err := Upcast(ev); err != nil {
		return nil, err
	}
	k, ok := Lookup(ev.Type)
	if !ok {
		return nil, fmt.Errorf("%w: unknown type %q", ErrInvalidEvent, ev.Type)
	}
	p := k.New()
	if err := json.Unmarshal(ev.Data, p); err != nil {
		return nil, fmt.Errorf("%w: %s: data: %v", ErrInvalidEvent, ev.Type, err)
	}
	return p, nil
}

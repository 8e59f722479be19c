package events

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"unicode"

	gojson "github.com/goccy/go-json"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/loredev/lore/schemas"
)

// ErrInvalidEvent is returned when an event fails its envelope rules, its
// schema or its payload's Check; nothing is appended. The message names the
// type and the field.
var ErrInvalidEvent = errors.New("lore: invalid event")

var compiled = struct {
	once    sync.Once
	err     error
	schemas map[string]*jsonschema.Schema // by versioned type
	// fast holds, by versioned type, the one-pass byte check of the same
	// schema (see fastSchema); a type missing here always takes the full
	// validator.
	fast map[string]*fastSchema
}{}

func compileSchemas() {
	compiled.schemas = map[string]*jsonschema.Schema{}
	compiled.fast = map[string]*fastSchema{}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	entries, err := fs.ReadDir(schemas.FS, ".")
	if err != nil {
		compiled.err = err
		return
	}
	for _, e := range entries {
		raw, err := schemas.FS.ReadFile(e.Name())
		if err != nil {
			compiled.err = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			compiled.err = fmt.Errorf("schema %s: %w", e.Name(), err)
			return
		}
		if err := c.AddResource(schemaURL(e.Name()), doc); err != nil {
			compiled.err = fmt.Errorf("schema %s: %w", e.Name(), err)
			return
		}
	}
	for _, k := range Kinds() {
		if _, err := fs.Stat(schemas.FS, schemas.FileName(k.Type)); err != nil && k.Derived {
			continue // announcements are written by lore; a schema is documentation
		}
		s, err := c.Compile(schemaURL(schemas.FileName(k.Type)))
		if err != nil {
			compiled.err = fmt.Errorf("schema for %s: %w", k.Type, err)
			return
		}
		compiled.schemas[k.Type] = s
		raw, err := schemas.FS.ReadFile(schemas.FileName(k.Type))
		if err != nil {
			compiled.err = err
			return
		}
		if f, err := compileFastSchema(raw); err == nil {
			compiled.fast[k.Type] = f
		} // else: a keyword the fast path does not handle; the full validator decides alone
	}
}

func schemaURL(file string) string { return "https://lore.schemas.local/" + file }

// SchemaCheck reports whether every registered kind has a schema that
// compiles; it is the error every validation would return otherwise.
func SchemaCheck() error {
	compiled.once.Do(compileSchemas)
	return compiled.err
}

// ValidateData checks data against the JSON Schema of typ and the payload's
// Check. The error wraps ErrInvalidEvent and names the field.
func ValidateData(typ string, data []byte) error {
	_, err := validateData(typ, data)
	return err
}

// RedactData is ValidateData for data about to be appended: credentials in
// the payload's free text are replaced by redaction markers instead of
// refused, and the data to append (re-encoded when redacted) is returned.
// It is the check the appender applies; ValidateData is the raw door's.
func RedactData(typ string, data []byte) ([]byte, error) {
	_, out, err := validatePayload(typ, data, true)
	return out, err
}

// RedactPayload is RedactData also returning the payload the data to
// append decodes into (nil for a derived kind without a schema), so that
// the caller needs no second decode.
func RedactPayload(typ string, data []byte) (Payload, []byte, error) {
	return validatePayload(typ, data, true)
}

// validateData is ValidateData returning the payload it decoded (nil for a
// derived kind without a schema), so that a caller needs no second decode.
//
// The schema check has two paths with one outcome: the fast byte check
// (fastSchema) accepts only what the full validator accepts; whatever it
// does not accept — invalid data, or data it cannot decide cheaply — goes
// to the full validator, which decides and names the field. Either way the
// payload is then decoded into its Go type and its Check runs.
func validateData(typ string, data []byte) (Payload, error) {
	p, _, err := validatePayload(typ, data, false)
	return p, err
}

// validatePayload is validateData; with redact, the credentials in the
// payload's free text (a Redactor) are first replaced by redaction markers
// and the data re-encoded (returned, else data itself); without, a
// credential there makes the payload invalid.
func validatePayload(typ string, data []byte, redact bool) (Payload, []byte, error) {
	p, err := validatePayloadOnce(typ, data, redact)
	if err != errRedacted {
		return p, data, err
	}
	// The redacted payload is validated again, from its new bytes.
	redacted, err := gojson.Marshal(p)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: re-encode after redaction: %v", ErrInvalidEvent, typ, err)
	}
	p, err = validatePayloadOnce(typ, redacted, false)
	return p, redacted, err
}

// errRedacted says validatePayloadOnce redacted the payload it returns.
var errRedacted = errors.New("redacted")

func validatePayloadOnce(typ string, data []byte, redact bool) (Payload, error) {
	compiled.once.Do(compileSchemas)
	if compiled.err != nil {
		return nil, fmt.Errorf("schemas: %w", compiled.err)
	}
	k, ok := Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("%w: field \"type\": unknown type %q", ErrInvalidEvent, typ)
	}
	s, ok := compiled.schemas[typ]
	if !ok {
		return nil, nil // a derived kind without a schema
	}
	clean := cleanData.has(typ, data)
	if !clean {
		if f := compiled.fast[typ]; f == nil || !f.valid(data) {
			if err := validateFull(s, typ, data); err != nil {
				return nil, err
			}
		}
	}
	// The payload must also fit its Go type (an integer beyond int64 passes
	// the schema's "integer"): decode it, so nothing appended is poison.
	p := k.New()
	if err := decodeStrict(data, p); err != nil {
		return nil, fmt.Errorf("%w: %s: field \"data\": %v", ErrInvalidEvent, typ, err)
	}
	if r, ok := p.(Redactor); ok && !clean {
		if redact {
			// Redact finds exactly what Secrets finds: nothing redacted
			// means nothing to refuse.
			if redactPayload(r) {
				return p, errRedacted
			}
		} else if err := checkSecrets(r); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidEvent, typ, err)
		}
	}
	if c, ok := p.(Checker); ok {
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidEvent, typ, err)
		}
	}
	if !clean {
		cleanData.add(typ, data)
	}
	return p, nil
}

// validateFull validates data with the JSON Schema validator; its error
// names the deepest failing field.
func validateFull(s *jsonschema.Schema, typ string, data []byte) error {
	inst, err := decodeInstance(data)
	if err != nil {
		return fmt.Errorf("%w: %s: field \"data\": not JSON: %v", ErrInvalidEvent, typ, err)
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			field, msg := leafError(ve)
			return fmt.Errorf("%w: %s: field %q: %s", ErrInvalidEvent, typ, "data"+field, msg)
		}
		return fmt.Errorf("%w: %s: %v", ErrInvalidEvent, typ, err)
	}
	return nil
}

var printer = message.NewPrinter(language.English)

// decodeInstance decodes JSON for the validator: numbers as json.Number (the
// validator's requirement, to keep precision), with goccy/go-json, several
// times faster than encoding/json here.
func decodeInstance(data []byte) (any, error) {
	dec := gojson.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// leafError picks the deepest cause: its location and its message.
func leafError(ve *jsonschema.ValidationError) (field, msg string) {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	loc := ve.InstanceLocation
	if r, ok := ve.ErrorKind.(*kind.Required); ok && len(r.Missing) > 0 {
		loc = append(append([]string{}, loc...), r.Missing[0])
		return pointer(loc), "is required"
	}
	if ap, ok := ve.ErrorKind.(*kind.AdditionalProperties); ok && len(ap.Properties) > 0 {
		loc = append(append([]string{}, loc...), ap.Properties[0])
		return pointer(loc), "is not allowed"
	}
	return pointer(loc), ve.ErrorKind.LocalizedString(printer)
}

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	return "." + strings.Join(loc, ".")
}

// Check decides whether an event may enter the read models: its envelope
// (ValidateEnvelope), its upcast payload against the schema of its type and
// the payload's Check. An empty subject is filled with the payload's
// aggregate id, an empty project with DefaultProject. It returns the decoded
// payload. The event is modified in place (upcast, subject, project).
//
// It is the one rule of every door: the appender applies it before an
// event reaches the log, the projector (CheckStored) to every message it
// reads, whoever published it.
func Check(ev *Event) (Payload, error) { return check(ev, false) }

// check is Check; with redact, credentials in the payload's free text are
// replaced by redaction markers (ev.Data re-encoded) instead of refused:
// the appender's way, so that no door can put a credential in the log.
func check(ev *Event, redact bool) (Payload, error) {
	if ev.Project == "" {
		ev.Project = DefaultProject
	}
	if err := ValidateEnvelope(ev); err != nil {
		return nil, err
	}
	if err := Upcast(ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	// One validation decodes the payload once; its aggregate id names the
	// subject when the writer gave none.
	p, data, err := validatePayload(ev.Type, ev.Data, redact)
	if err != nil {
		return nil, err
	}
	ev.Data = data
	if p == nil { // a kind without a schema (none is appendable today)
		if p, err = DecodeData(ev); err != nil {
			return nil, err
		}
	}
	if ev.Subject == "" {
		ev.Subject = p.AggregateID()
	}
	return p, nil
}

// CheckStored is Check of an event read from the log on subject: it also
// requires the subject to be the one the event's project, aggregate and
// subject encode (SubjectFor), so that the last message of a subject is the
// aggregate's last event and permissions scoped to a project's subjects
// hold. Headers are not trusted: every event is checked.
func CheckStored(subject string, ev *Event) (Payload, error) {
	p, err := Check(ev)
	if err != nil {
		return nil, err
	}
	want, err := SubjectFor(ev)
	if err != nil {
		return nil, err
	}
	if subject != want {
		return nil, fmt.Errorf("%w: field \"subject\": stored on %q, but the envelope (project %q, subject %q) belongs on %q",
			ErrInvalidEvent, subject, ev.Project, ev.Subject, want)
	}
	return p, nil
}

// CheckID says what is wrong with an event id (nil: nothing): 1-128
// characters without spaces or control characters. The rule of every
// door that takes an event id.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("is required")
	case len(id) > 128 || strings.IndexFunc(id, unicode.IsSpace) >= 0 || strings.IndexFunc(id, unicode.IsControl) >= 0:
		return fmt.Errorf("%q must be 1-128 characters without spaces", id)
	}
	return nil
}

// CheckProject says what is wrong with a project name (nil: nothing; ""
// stands for the default project): at most 128 characters without
// spaces. The rule of every door that takes a project.
func CheckProject(project string) error {
	if len(project) > 128 || strings.IndexFunc(project, unicode.IsSpace) >= 0 {
		return fmt.Errorf("%q must be at most 128 characters without spaces", project)
	}
	return nil
}

// ValidateEnvelope checks the envelope of an event about to be appended.
// Derived kinds are refused: only lore announces them.
func ValidateEnvelope(ev *Event) error {
	if err := CheckID(ev.ID); err != nil {
		return fmt.Errorf("%w: field \"id\": %v", ErrInvalidEvent, err)
	}
	if err := CheckProject(ev.Project); err != nil {
		return fmt.Errorf("%w: field \"project\": %v", ErrInvalidEvent, err)
	}
	switch {
	case ev.Time.IsZero():
		return fmt.Errorf("%w: field \"time\": is required (RFC 3339)", ErrInvalidEvent)
	case ev.Time.Year() < 1970 || ev.Time.Year() > 9999:
		return fmt.Errorf("%w: field \"time\": %s is out of range", ErrInvalidEvent, ev.Time)
	case len(ev.Source) > 256:
		return fmt.Errorf("%w: field \"source\": longer than 256 characters", ErrInvalidEvent)
	case len(ev.Subject) > 256:
		return fmt.Errorf("%w: field \"subject\": longer than 256 characters", ErrInvalidEvent)
	}
	k, ok := Lookup(ev.Type)
	if !ok {
		if _, v := SplitType(ev.Type); v == 0 {
			return fmt.Errorf("%w: field \"type\": %q is not a versioned type like outcome.recorded/v1", ErrInvalidEvent, ev.Type)
		}
		return fmt.Errorf("%w: field \"type\": unknown type %q", ErrInvalidEvent, ev.Type)
	}
	if k.Derived {
		return fmt.Errorf("%w: field \"type\": %s is announced by lore, not appended", ErrInvalidEvent, ev.Type)
	}
	return nil
}

// cleanData remembers data that passed its type's schema with no
// credential in its free text: both are pure functions of the type and
// the bytes, and each event is checked at several doors of one process
// (the command's arguments, the appender, the projector reading it back),
// so the later ones skip them. The Go decode and the payload's Check still
// run every time (their results are the payload).
//
// A verdict is keyed by the SHA-256 of the type and the bytes (a collision,
// which would let unchecked bytes pass, is out of reach), so the memo holds
// verdictsMax of them in a few MiB whatever the payloads' size: enough to
// cover the distance between the door and the projector of an import
// sent in parts of thousands of events. Two generations: when the newer
// is full it becomes the older and the oldest is dropped, so a verdict
// given just before is never the one forgotten.
var cleanData verdicts

type verdicts struct {
	mu        sync.Mutex
	cur, prev map[[sha256.Size]byte]struct{} // guarded by mu
}

// verdictsMax bounds each generation (≈ 48 bytes an entry).
const verdictsMax = 1 << 15

func (v *verdicts) has(typ string, data []byte) bool {
	k := verdictKey(typ, data)
	v.mu.Lock()
	_, ok := v.cur[k]
	if !ok {
		_, ok = v.prev[k]
	}
	v.mu.Unlock()
	return ok
}

func (v *verdicts) add(typ string, data []byte) {
	k := verdictKey(typ, data)
	v.mu.Lock()
	if v.cur == nil || len(v.cur) >= verdictsMax {
		v.prev, v.cur = v.cur, make(map[[sha256.Size]byte]struct{})
	}
	v.cur[k] = struct{}{}
	v.mu.Unlock()
}

func verdictKey(typ string, data []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(typ))
	h.Write([]byte{0})
	h.Write(data)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

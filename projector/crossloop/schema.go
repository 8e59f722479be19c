package crossloop

import (
	"bytes"
	_ "embed"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// sharedPatternsSchema is the JSON translation of the shared registry's
// schema (shared-patterns.yaml): what exported files satisfy and imported
// files are checked against.
//
//go:embed testdata/shared-patterns.schema.json
var sharedPatternsSchema []byte

// SharedPatternsSchema returns the schema document (for `lore schemas`).
func SharedPatternsSchema() []byte { return append([]byte(nil), sharedPatternsSchema...) }

const schemaURL = "https://aiwg.io/schemas/ralph-shared-patterns/v1"

var schemas = struct {
	once sync.Once
	err  error
	defs map[string]*jsonschema.Schema // "" is the root document
}{}

func compile() {
	schemas.defs = map[string]*jsonschema.Schema{}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sharedPatternsSchema))
	if err != nil {
		schemas.err = err
		return
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		schemas.err = err
		return
	}
	for _, d := range []string{"", "ErrorPattern", "SuccessPattern", "AntiPattern", "CodeTemplate", "EffectivenessMetrics", "PruningPolicy"} {
		u := schemaURL
		if d != "" {
			u += "#/$defs/" + d
		}
		s, err := c.Compile(u)
		if err != nil {
			schemas.err = fmt.Errorf("compile %s: %w", u, err)
			return
		}
		schemas.defs[d] = s
	}
}

// ValidateDoc validates a JSON document against the root schema (def "")
// or one of its $defs ("ErrorPattern", ...). It returns the errors in the
// form "<instance path> <keyword>: <message>" (the path "/" for the root),
// sorted; none when valid.
func ValidateDoc(def string, raw []byte) ([]string, error) {
	schemas.once.Do(compile)
	if schemas.err != nil {
		return nil, schemas.err
	}
	s, ok := schemas.defs[def]
	if !ok {
		return nil, fmt.Errorf("unknown definition %q", def)
	}
	inst, err := decodeInstance(raw)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	err = s.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []string
	leaves(ve, &out)
	sort.Strings(out)
	return out, nil
}

// decodeInstance is jsonschema.UnmarshalJSON (numbers as json.Number),
// by a faster decoder (goccy/go-json, the same tree: its Number is
// encoding/json's) when the document is one both read alike: valid JSON
// by encoding/json's check (one value, nothing after it), valid UTF-8 and
// no escaped surrogate (where decoders may differ). Any other document,
// and any error, is read by jsonschema's own.
func decodeInstance(raw []byte) (any, error) {
	if stdjson.Valid(raw) && utf8.Valid(raw) && !escapedSurrogate(raw) {
		dec := gojson.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// escapedSurrogate reports whether raw holds a \uD800-\uDFFF escape.
func escapedSurrogate(raw []byte) bool {
	for i := bytes.Index(raw, []byte(`\u`)); i >= 0; {
		if i+2 < len(raw) && (raw[i+2] == 'd' || raw[i+2] == 'D') && i+3 < len(raw) {
			if c := raw[i+3] | 0x20; c >= '8' && c <= '9' || c >= 'a' && c <= 'f' {
				return true
			}
		}
		j := bytes.Index(raw[i+2:], []byte(`\u`))
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return false
}

var printer = message.NewPrinter(language.English)

func leaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			leaves(c, out)
		}
		return
	}
	path := "/" + strings.Join(ve.InstanceLocation, "/")
	add := func(kw, msg string) { *out = append(*out, path+" "+kw+": "+msg) }
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			add("required", "must have required property '"+m+"'")
		}
	case *kind.Pattern:
		add("pattern", `must match pattern "`+k.Want+`"`)
	case *kind.MinLength:
		add("minLength", fmt.Sprintf("must NOT have fewer than %d characters", k.Want))
	case *kind.Enum:
		add("enum", "must be equal to one of the allowed values")
	case *kind.Maximum:
		add("maximum", "must be <= "+k.Want.FloatString(ratPrec(k.Want)))
	case *kind.Minimum:
		add("minimum", "must be >= "+k.Want.FloatString(ratPrec(k.Want)))
	case *kind.Format:
		add("format", `must match format "`+k.Want+`"`)
	case *kind.Type:
		add("type", "must be "+strings.Join(k.Want, ","))
	default:
		add(strings.Join(ve.ErrorKind.KeywordPath(), "/"), ve.ErrorKind.LocalizedString(printer))
	}
}

func ratPrec(r interface{ IsInt() bool }) int {
	if r.IsInt() {
		return 0
	}
	return 6
}

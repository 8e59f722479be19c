package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/consumers"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/crossloop"
	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/projector/learning"
	"github.com/loredev/lore/schemas"
)

// Flag values are checked in one place, before any work.
//
// Every non-bool flag of every command declares its rule next to its
// definition (declare), or says it takes free text (freeText). guardFlags
// makes each command check all its flags, its own and the inherited global
// ones, first: ahead of its positional arguments, its hooks and its RunE,
// so a bad value dials nothing, appends nothing and starts nothing. A bad
// value is bad input (exit code 2) with a message naming the flag.
//
// What is checked: every flag given on the command line, and every
// non-empty string flag (defaults included, so a value taken from the
// environment, e.g. LORE_METRICS, is checked too). An empty string means
// "not given" and always passes. TestEveryFlagHasARule walks the command
// tree: a flag without a rule fails it; TestInvalidFlagValuesExit2BeforeAnyWork
// runs every rule with a value it refuses.

// ruleKey is the pflag annotation that holds a flag's rule.
const ruleKey = "lore.rule"

// A rule is kept in its flag's annotations as [kind, params...] and
// decoded by checkValue; the constructors below build them.
type rule []string

// rules maps flag names to their rules, for declare.
type rules map[string]rule

// declare attaches rules to flags of fl. A name that is not a flag of fl
// is a wiring bug: it panics.
func declare(fl *pflag.FlagSet, rs rules) {
	for name, r := range rs {
		if fl.Lookup(name) == nil {
			panic("declare: no flag --" + name)
		}
		if err := fl.SetAnnotation(name, ruleKey, r); err != nil {
			panic(err)
		}
	}
}

// freeText marks flags of fl that take any text (ids, text, paths); what
// they name is checked where it is used.
func freeText(fl *pflag.FlagSet, names ...string) {
	rs := rules{}
	for _, n := range names {
		rs[n] = rule{kindFree}
	}
	declare(fl, rs)
}

const (
	kindFree    = "free"
	kindMin     = "min"    // number or duration >= p0
	kindAbove   = "above"  // number or duration > p0
	kindRange   = "range"  // number in [p0, p1]
	kindOneOf   = "oneof"  // the value (each element of a list flag) in params
	kindListOf  = "listof" // each of the comma-separated values in params
	kindPort    = "port"
	kindHost    = "host"
	kindAddr    = "hostport"
	kindTime    = "time"
	kindDomain  = "domain" // a named check of domainChecks
	kindIntList = "intlist"
	kindSchema  = "schema" // the JSON Schema of a field: params file, field, a refused value
)

func atLeast(n float64) rule      { return rule{kindMin, fmtNum(n)} }
func above(n float64) rule        { return rule{kindAbove, fmtNum(n)} }
func between(lo, hi float64) rule { return rule{kindRange, fmtNum(lo), fmtNum(hi)} }

// oneOf accepts only the given values; a list flag checks each element.
func oneOf(values ...string) rule { return append(rule{kindOneOf}, values...) }

// listOf accepts comma-separated values, each one of the given values.
func listOf(values ...string) rule { return append(rule{kindListOf}, values...) }

// schemaEnum is oneOf the "enum" of a field of an event type's JSON Schema
// ("import.format" for a nested field), so the set is written once, in the
// schema. A missing schema or enum is a wiring bug: it panics.
func schemaEnum(typ, field string) rule { return oneOf(enumOf(typ, field)...) }

// schemaList is listOf the "enum" of a field (or of its items) of an
// event type's JSON Schema.
func schemaList(typ, field string) rule { return listOf(enumOf(typ, field)...) }

// schemaField checks a value against the JSON Schema of a field of a
// schema file ("envelope.v1.json", "project"), so a flag that becomes that
// field is held to the rule the append applies. bad is a value the schema
// refuses, for the table test.
func schemaField(file, field, bad string) rule {
	if _, err := fieldSchema(file, field); err != nil {
		panic("schemaField: " + err.Error())
	}
	return rule{kindSchema, file, field, bad}
}

// domain applies a named check of domainChecks.
func domain(name string) rule {
	if _, ok := domainChecks[name]; !ok {
		panic("domain: no check " + name)
	}
	return rule{kindDomain, name}
}

var (
	// port is a TCP port, or -1 for any free port.
	port = rule{kindPort}
	// host is an IP address or a host name.
	host = rule{kindHost}
	// hostPort is a listen address, host:port ("" disables where said).
	hostPort = rule{kindAddr}
	// timestamp is an RFC 3339 time or a date (parseTime).
	timestamp = rule{kindTime}
	// intList is comma-separated integers.
	intList = rule{kindIntList}
)

// domainCheck is a domain rule for a flag value, with a value it refuses
// (for the table test).
type domainCheck struct {
	check func(string) error
	bad   string
}

// domainChecks are checks owned by the domain packages, by name.
var domainChecks = map[string]domainCheck{
	"knowledge-category": {func(s string) error {
		if !knowledge.ValidCategory(s) {
			return fmt.Errorf("must be one of %s, %s",
				strings.Join(knowledge.Categories, ", "), strings.Join(knowledge.SeedCategories, ", "))
		}
		return nil
	}, "nonsense"},
	"knowledge-status": {func(s string) error { return inSet(s, knowledge.Statuses) }, "nonsense"},
	"knowledge-scope": {func(s string) error {
		if !knowledge.ValidScope(s) {
			return fmt.Errorf("must be global or stack:<name>")
		}
		return nil
	}, "stack:two words"},
	"pattern-type": {func(s string) error {
		if !crossloop.ValidType(s) {
			return fmt.Errorf("must be one of %s, %s, %s, %s", crossloop.TypeError, crossloop.TypeSuccess, crossloop.TypeAnti, crossloop.TypeTemplate)
		}
		return nil
	}, "nonsense"},
	"pattern-types": {func(s string) error {
		for _, t := range strings.Split(s, ",") {
			if !crossloop.ValidType(strings.TrimSpace(t)) {
				return fmt.Errorf("%q: each must be one of %s, %s, %s, %s", t, crossloop.TypeError, crossloop.TypeSuccess, crossloop.TypeAnti, crossloop.TypeTemplate)
			}
		}
		return nil
	}, "error,nonsense"},
	"learning-time": {func(s string) error {
		_, err := learning.ParseTime("time", s)
		return err
	}, "not-a-time"},
	"event-type": {func(s string) error {
		if _, ok := events.ResolveType(s); !ok {
			return fmt.Errorf("unknown event type %q (see `lore events types`)", s)
		}
		return nil
	}, "nonsense.type"},
	"announcement-types": {func(s string) error {
		return consumers.Filter{Types: consumers.ParseTypes(s)}.Validate()
	}, "exploded"},
	"consumer-name": {func(s string) error {
		_, err := consumers.DurableName("x", s)
		return err
	}, "a.b"},
	"webhook-url": {consumers.ValidateURL, "ftp://x"},
	"nats-urls":   {validNatsURLs, "not a url"},
	"idempotency-key": {func(s string) error {
		if app.CheckIdempotencyKey(s) != nil {
			return fmt.Errorf("must be 1-%d characters without spaces", app.MaxIdempotencyKey)
		}
		return nil
	}, "two words"},
}

// guardFlags makes every command under root check its flags before its
// positional arguments (cobra validates those before any hook). root
// itself keeps cobra's own argument handling (unknown commands).
func guardFlags(root *cobra.Command) {
	for _, c := range root.Commands() {
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := checkFlags(cmd); err != nil {
				return err
			}
			if args == nil {
				return nil
			}
			return args(cmd, a)
		}
		guardFlags(c)
	}
}

// checkFlags checks every flag of cmd (own and inherited) against its rule.
func checkFlags(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if err == nil {
			err = checkFlag(fl)
		}
	})
	return err
}

func checkFlag(fl *pflag.Flag) error {
	r := rule(fl.Annotations[ruleKey])
	if len(r) == 0 || r[0] == kindFree {
		return nil
	}
	stringy := strings.HasPrefix(fl.Value.Type(), "string")
	if !fl.Changed && !stringy {
		return nil // a built-in default
	}
	values := []string{fl.Value.String()}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		values = sv.GetSlice()
	} else if r[0] == kindListOf {
		values = strings.Split(values[0], ",")
	}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if stringy && v == "" {
			continue // not given
		}
		if err := checkValue(r, fl.Value.Type(), v); err != nil {
			return fmt.Errorf("%w: --%s %q: %v", errBadInput, fl.Name, v, err)
		}
	}
	return nil
}

// checkValue applies r to one value of a flag of pflag type typ.
func checkValue(r rule, typ, v string) error {
	switch r[0] {
	case kindMin, kindAbove, kindRange:
		x, err := number(typ, v)
		if err != nil {
			return err
		}
		lo, _ := strconv.ParseFloat(r[1], 64)
		switch {
		case r[0] == kindMin && x < lo:
			return fmt.Errorf("must be >= %s", bound(typ, lo))
		case r[0] == kindAbove && x <= lo:
			return fmt.Errorf("must be > %s", bound(typ, lo))
		case r[0] == kindRange:
			hi, _ := strconv.ParseFloat(r[2], 64)
			if x < lo || x > hi || math.IsNaN(x) {
				return fmt.Errorf("must be in [%s, %s]", bound(typ, lo), bound(typ, hi))
			}
		}
		return nil
	case kindOneOf, kindListOf:
		return inSet(v, r[1:])
	case kindPort:
		p, err := strconv.Atoi(v)
		if err != nil || p != -1 && (p < 1 || p > 65535) {
			return fmt.Errorf("must be a port in [1, 65535], or -1 for any free port")
		}
		return nil
	case kindHost:
		if net.ParseIP(v) == nil && !hostnameRe.MatchString(v) {
			return fmt.Errorf("must be an IP address or a host name")
		}
		return nil
	case kindAddr:
		return validHostPort(v)
	case kindTime:
		_, err := parseTime(v)
		return err
	case kindIntList:
		for _, s := range strings.Split(v, ",") {
			if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
				return fmt.Errorf("must be comma-separated integers")
			}
		}
		return nil
	case kindDomain:
		return domainChecks[r[1]].check(v)
	case kindSchema:
		s, err := fieldSchema(r[1], r[2])
		if err != nil {
			return err
		}
		if err := s.Validate(v); err != nil {
			lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
			return fmt.Errorf("%s", strings.TrimPrefix(strings.TrimSpace(lines[len(lines)-1]), "- at '': "))
		}
		return nil
	}
	return fmt.Errorf("unknown rule %q", r[0])
}

// number reads a numeric flag value; durations count in seconds.
func number(typ, v string) (float64, error) {
	if typ == "duration" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, err
		}
		return d.Seconds(), nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) {
		return 0, fmt.Errorf("not a number")
	}
	return x, nil
}

func bound(typ string, x float64) string {
	if typ == "duration" {
		return time.Duration(x * float64(time.Second)).String()
	}
	return fmtNum(x)
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func inSet(v string, set []string) error {
	if slices.Contains(set, v) {
		return nil
	}
	return fmt.Errorf("must be one of %s", strings.Join(set, ", "))
}

var hostnameRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

// validHostPort checks a listen address: [host]:port, port in [0, 65535].
func validHostPort(v string) error {
	h, p, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("must be host:port (e.g. 127.0.0.1:9464)")
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q must be in [0, 65535]", p)
	}
	if h != "" && net.ParseIP(h) == nil && !hostnameRe.MatchString(h) {
		return fmt.Errorf("host %q must be an IP address or a host name", h)
	}
	return nil
}

// validNatsURLs checks a comma-separated list of NATS server URLs
// (nats://, tls://, ws://, wss://, or host:port).
func validNatsURLs(v string) error {
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
			return fmt.Errorf("must be NATS URLs, comma-separated (nats://host:4222)")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("port %q must be in [1, 65535]", p)
			}
		}
	}
	return nil
}

// invalidValue is a value r refuses for a flag of pflag type typ, and
// whether there is one (free text has none).
func invalidValue(r rule, typ string) (string, bool) {
	num := func(x float64) string {
		if typ == "duration" {
			return bound(typ, x)
		}
		return fmtNum(x)
	}
	switch r[0] {
	case kindMin:
		lo, _ := strconv.ParseFloat(r[1], 64)
		return num(lo - 1), true
	case kindAbove:
		lo, _ := strconv.ParseFloat(r[1], 64)
		return num(lo), true
	case kindRange:
		hi, _ := strconv.ParseFloat(r[2], 64)
		return num(hi + 1), true
	case kindOneOf, kindListOf:
		return "not-one-of-them", true
	case kindPort:
		return "99999", true
	case kindHost:
		return "not a host", true
	case kindAddr:
		return "not-an-address", true
	case kindTime, kindIntList:
		return "not-a-value", true
	case kindDomain:
		return domainChecks[r[1]].bad, true
	case kindSchema:
		return r[3], true
	}
	return "", false
}

// enumOf reads the enum of a field of an event type's schema.
func enumOf(typ, field string) []string {
	key := typ + "#" + field
	if v, ok := enumCache.Load(key); ok {
		return v.([]string)
	}
	raw, err := schemas.FS.ReadFile(schemas.FileName(typ))
	if err != nil {
		panic("schemaEnum: " + err.Error())
	}
	type schemaNode struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
		Enum       []string                   `json:"enum"`
	}
	doc := json.RawMessage(raw)
	for _, name := range strings.Split(field, ".") {
		var n schemaNode
		if err := json.Unmarshal(doc, &n); err != nil {
			panic("schemaEnum: " + err.Error())
		}
		if doc = n.Properties[name]; doc == nil {
			panic("schemaEnum: no field " + field + " in " + typ)
		}
	}
	var n schemaNode
	if err := json.Unmarshal(doc, &n); err != nil {
		panic("schemaEnum: " + err.Error())
	}
	enum := n.Enum
	if len(enum) == 0 && n.Items != nil {
		var it schemaNode
		_ = json.Unmarshal(n.Items, &it)
		enum = it.Enum
	}
	if len(enum) == 0 {
		panic("schemaEnum: no enum for " + field + " in " + typ)
	}
	enumCache.Store(key, enum)
	return enum
}

var enumCache sync.Map

// fieldSchema compiles, once, the schema of a field of a schema file.
func fieldSchema(file, field string) (*jsonschema.Schema, error) {
	key := file + "#" + field
	if s, ok := fieldSchemas.Load(key); ok {
		return s.(*jsonschema.Schema), nil
	}
	raw, err := schemas.FS.ReadFile(file)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", file, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(file, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", file, err)
	}
	s, err := c.Compile(file + "#/properties/" + field)
	if err != nil {
		return nil, fmt.Errorf("schema %s field %s: %w", file, field, err)
	}
	fieldSchemas.Store(key, s)
	return s, nil
}

var fieldSchemas sync.Map

package events

import (
	"strings"
	"testing"
)

// fastSeeds are payloads the fast path must decide alone (valid, common
// shapes), each with its type.
var fastSeeds = []struct{ typ, data string }{
	{"outcome.recorded/v1", `{"bead_id":"bd-1.2","duration_ms":180000,"retry_count":0,"success":true,"criteria":["type_safe","small_diff"],"strategy":"file-based"}`},
	{"outcome.recorded/v1", ` {"bead_id" : "b\u00e9\"q\\", "duration_ms":0,"error_count":2,"retry_count":3,"success":false,"files_touched":[],"decomposition":"1. a\n2. b"} `},
	{"error.recorded/v1", `{"bead_id":"b","error_type":"timeout","message":"Type error in src/auth.ts","stack_trace":"at x\n\tat y"}`},
	{"feedback.recorded/v1", `{"criterion":"type_safe","type":"helpful","raw_value":0.75}`},
	{"feedback.recorded/v1", `{"criterion":"type_safe","type":"harmful","raw_value":1}`},
	{"pattern.observed/v1", `{"pattern_id":"p-1","success":true,"tags":["a","b"]}`},
	{"pattern.observed/v1", `{"content":"Split by file type","success":false}`},
	{"loop.started/v1", `{"loop_id":"ralph-fix-auth-a1b2c3d4","task":"fix auth"}`},
	{"knowledge.submitted/v1", `{"lesson":"Prefer table-driven tests for parsers","category":"testing","confidence":0.9,"tags":["go"]}`},
	{"registry.extract_requested/v1", `{"all":true,"types":["error"]}`},
	{"registry.imported/v1", `{"patterns":[{"pattern_id":"pat-error-x-001","type":"error","success_rate":0.5,"usage_count":3}]}`},
	{"knowledge.submitted/v1", `{"lesson":"l","category":"c","import":{"format":"knowledge.jsonl","digest":"` + strings.Repeat("a", 64) + `","created_at":"2026-01-02T03:04:05Z","confirmed_by":[{"project_name":"p","confirmed_at":"2024-02-29T23:59:59.123456789+05:30"}]}}`},
}

// edgeCases are payloads at or beyond the edges the fast path handles; the
// full validator may accept or refuse them, the fast path must never accept
// what it refuses.
var edgeCases = []struct{ typ, data string }{
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":-5,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":-0,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":5.0,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":5e0,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":1e400,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":99999999999999999999999,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":-99999999999999999999999,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":01,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true,"success":"yes"}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true,}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true} x`},
	{"outcome.recorded/v1", `{"bead_id":"","duration_ms":1,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"\ud800","duration_ms":1,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"\ud83d\ude00","duration_ms":1,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", "{\"bead_id\":\"\xff\",\"duration_ms\":1,\"retry_count\":0,\"success\":true}"},
	{"outcome.recorded/v1", "{\"bead_id\":\"a\tb\",\"duration_ms\":1,\"retry_count\":0,\"success\":true}"},
	{"outcome.recorded/v1", `{"bead_\u0069d":"b","duration_ms":1,"retry_count":0,"success":true}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true,"criteria":[""]}`},
	{"outcome.recorded/v1", `{"bead_id":"b","duration_ms":1,"retry_count":0,"success":null}`},
	{"outcome.recorded/v1", `[]`},
	{"outcome.recorded/v1", `null`},
	{"outcome.recorded/v1", ``},
	{"feedback.recorded/v1", `{"criterion":"c","type":"helpful","raw_value":1.0000000000000000001}`},
	{"feedback.recorded/v1", `{"criterion":"c","type":"helpful","raw_value":-0.0}`},
	{"feedback.recorded/v1", `{"criterion":"c","type":"helpful","raw_value":1e-400}`},
	{"feedback.recorded/v1", `{"criterion":"c","type":"helpfu","raw_value":0}`},
	{"pattern.observed/v1", `{"success":true}`},
	{"pattern.observed/v1", `{"pattern_id":"has space","success":true}`},
	{"registry.extract_requested/v1", `{"types":["error","error"]}`},
	{"registry.imported/v1", `{"patterns":[]}`},
	{"registry.imported/v1", `{"patterns":[{"pattern_id":"pat-error-x-01","type":"error"}]}`},
	{"knowledge.submitted/v1", `{"lesson":"l","category":"c","import":{"format":"context.md","digest":"` + strings.Repeat("a", 64) + `","created_at":"2026-13-01T00:00:00Z"}}`},
	{"knowledge.submitted/v1", `{"lesson":"l","category":"c","phase":0}`},
	{"loop.started/v1", `{"loop_id":"ralph-fix-auth-a1b2c3dg","task":"fix auth"}`},
}

// checkSound fails when the fast path accepts data the full validator
// refuses: the invariant of fastSchema.
func checkSound(t *testing.T, typ string, data []byte) (fast bool) {
	t.Helper()
	if err := SchemaCheck(); err != nil {
		t.Fatal(err)
	}
	f, s := compiled.fast[typ], compiled.schemas[typ]
	if f == nil || s == nil {
		return false
	}
	fast = f.valid(data)
	if err := validateFull(s, typ, data); fast && err != nil {
		t.Fatalf("%s %q: the fast path accepts what the schema refuses: %v", typ, data, err)
	}
	return fast
}

func TestFastSchemaCoversEveryKind(t *testing.T) {
	if err := SchemaCheck(); err != nil {
		t.Fatal(err)
	}
	for typ := range compiled.schemas {
		if compiled.fast[typ] == nil {
			t.Errorf("%s: its schema uses a keyword the fast path does not handle (see fastSchema.keyword); it is validated only by the slow full path", typ)
		}
	}
}

func TestFastSchemaDecidesCommonPayloads(t *testing.T) {
	for _, c := range fastSeeds {
		if !checkSound(t, c.typ, []byte(c.data)) {
			t.Errorf("%s %s: not accepted by the fast path", c.typ, c.data)
		}
	}
}

// TestFastSchemaIsSound checks the invariant on edge cases and on every
// single-byte deletion and a few insertions in the seeds.
func TestFastSchemaIsSound(t *testing.T) {
	for _, c := range edgeCases {
		checkSound(t, c.typ, []byte(c.data))
	}
	inserts := []string{`"`, `\`, `,`, `}`, `]`, `-`, `.5`, `e9`, `null`, `"x":1,`, `1`, " ", "\xc3"}
	for _, c := range fastSeeds {
		d := []byte(c.data)
		for i := range d {
			checkSound(t, c.typ, append(append([]byte{}, d[:i]...), d[i+1:]...))
			for _, ins := range inserts {
				checkSound(t, c.typ, []byte(string(d[:i])+ins+string(d[i:])))
			}
		}
	}
}

// TestFastDateTimeIsSound: every string the fast path takes for a
// "date-time" is one the full validator accepts, over RFC 3339 forms and
// their one-character changes; the common forms are decided fast.
func TestFastDateTimeIsSound(t *testing.T) {
	payload := func(v string) []byte {
		return []byte(`{"lesson":"l","category":"c","import":{"format":"knowledge.jsonl","digest":"` + strings.Repeat("a", 64) + `","created_at":"` + v + `"}}`)
	}
	common := []string{"2026-01-02T03:04:05Z", "1999-12-31T23:59:59.5Z", "2024-02-29T00:00:00+14:00", "2026-07-01T12:30:00-08:00",
		"0001-01-01T00:00:00.000000001Z"}
	for _, v := range common {
		if !checkSound(t, "knowledge.submitted/v1", payload(v)) {
			t.Errorf("%s: not decided by the fast path", v)
		}
	}
	bases := append([]string{"2023-02-29T00:00:00Z", "2026-01-02T24:00:00Z", "2026-01-02T23:60:00Z", "2026-01-02T23:59:60Z",
		"1998-12-31T23:59:60Z", "1998-12-31T15:59:60-08:00", "2026-01-02t03:04:05z", "2026-01-02T03:04:05.Z",
		"2026-01-02T03:04:05+24:00", "2026-01-02T03:04:05+05:60", "2026-01-02T03:04:05+0530", "2026-1-02T03:04:05Z",
		"+026-01-02T03:04:05Z", "2026-01-02T03:04:05", "2026-00-10T03:04:05Z", "2026-01-32T03:04:05Z"}, common...)
	alphabet := []byte("0123456789+-:.TtZz ")
	for _, b := range bases {
		checkSound(t, "knowledge.submitted/v1", payload(b))
		for i := range len(b) {
			for _, c := range alphabet {
				m := []byte(b)
				m[i] = c
				checkSound(t, "knowledge.submitted/v1", payload(string(m)))
			}
			checkSound(t, "knowledge.submitted/v1", payload(b[:i]+b[i+1:]))
		}
	}
}

// FuzzFastSchemaIsSound: for any data and any type of the catalogue, the
// fast path never accepts what the full validator refuses.
func FuzzFastSchemaIsSound(f *testing.F) {
	kinds := Kinds()
	index := map[string]uint8{}
	for i, k := range kinds {
		index[k.Type] = uint8(i)
	}
	for _, c := range fastSeeds {
		f.Add(index[c.typ], []byte(c.data))
	}
	for _, c := range edgeCases {
		f.Add(index[c.typ], []byte(c.data))
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		checkSound(t, kinds[int(k)%len(kinds)].Type, data)
	})
}

package learning

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf16"

	json "github.com/goccy/go-json"

	"github.com/loredev/lore/projector/promptline"
)

// Error types of the accumulator. Anything else is bad input.
var errorTypes = []string{"validation", "timeout", "conflict", "tool_failure", "unknown"}

// ValidErrorType reports whether t is one of the five error types.
func ValidErrorType(t string) bool {
	for _, e := range errorTypes {
		if e == t {
			return true
		}
	}
	return false
}

// ErrorEntry is one recorded error of a bead. Its ID is the event id.
type ErrorEntry struct {
	ID         string    `json:"id"`
	BeadID     string    `json:"bead_id"`
	ErrorType  string    `json:"error_type"`
	Message    string    `json:"message"`
	StackTrace string    `json:"stack_trace,omitempty"`
	ToolName   string    `json:"tool_name,omitempty"`
	Context    string    `json:"context,omitempty"`
	Time       time.Time `json:"timestamp"`
	Resolved   bool      `json:"resolved"`
}

// ErrorContext is getErrorContext over a bead's errors in recording order:
// the reference's markdown, byte for byte, except the Time line, which is
// RFC 3339 UTC (SPEC §4). No (shown) errors → "".
func ErrorContext(entries []ErrorEntry, includeResolved bool) string {
	var shown []ErrorEntry
	for _, e := range entries {
		if includeResolved || !e.Resolved {
			shown = append(shown, e)
		}
	}
	if len(shown) == 0 {
		return ""
	}
	var order []string
	byType := map[string][]ErrorEntry{}
	for _, e := range shown {
		if _, ok := byType[e.ErrorType]; !ok {
			order = append(order, e.ErrorType)
		}
		byType[e.ErrorType] = append(byType[e.ErrorType], e)
	}
	lines := []string{"## Previous Errors", "", "The following errors were encountered during execution:", ""}
	for _, t := range order {
		es := byType[t]
		noun := "errors"
		if len(es) == 1 {
			noun = "error"
		}
		lines = append(lines, "### "+t+" ("+jsNum(float64(len(es)))+" "+noun+")", "")
		for _, e := range es {
			// Stored texts are one safe line each (promptline).
			lines = append(lines, "- **"+promptline.Line(e.Message)+"**")
			if e.Context != "" {
				lines = append(lines, "  - Context: "+promptline.Line(e.Context))
			}
			if e.ToolName != "" {
				lines = append(lines, "  - Tool: "+promptline.Line(e.ToolName))
			}
			if e.StackTrace != "" {
				lines = append(lines, "  - Stack: `"+promptline.Line(utf16Prefix(e.StackTrace, 100))+"...`")
			}
			tl := "  - Time: " + contextTime(e.Time)
			if e.Resolved {
				tl += " (resolved)"
			}
			lines = append(lines, tl, "")
		}
	}
	lines = append(lines, "**Action Required**: Address these errors before proceeding. Consider:",
		"- What caused each error?", "- How can you prevent similar errors?",
		"- Are there patterns across error types?", "")
	return strings.Join(lines, "\n")
}

// contextTime renders an error's time on the context's Time: line: RFC 3339
// in UTC to the second (SPEC §4), whether the writer backfilled the time or
// lore stamped it with the clock's nanoseconds.
// INVARIANT: the same instant renders the same line, whatever its precision.
func contextTime(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// utf16Prefix is JavaScript's s.substring(0, n): the first n UTF-16 units.
func utf16Prefix(s string, n int) string {
	u := utf16.Encode([]rune(s))
	if len(u) <= n {
		return s
	}
	return string(utf16.Decode(u[:n]))
}

// TypeCount is one error type's count.
type TypeCount struct {
	Type  string
	Count int
}

// ByType counts errors per type in order of first appearance; it encodes
// as a JSON object with keys in that order.
type ByType []TypeCount

// MarshalJSON writes {"type": n, ...} in order.
func (b ByType) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, tc := range b {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(tc.Type)
		buf.Write(k)
		buf.WriteByte(':')
		buf.WriteString(jsNum(float64(tc.Count)))
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads the object back, keeping key order.
func (b *ByType) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return err
	}
	*b = (*b)[:0]
	for dec.More() {
		tk, err := dec.Token()
		if err != nil {
			return err
		}
		var n int
		if err := dec.Decode(&n); err != nil {
			return err
		}
		k, _ := tk.(string)
		*b = append(*b, TypeCount{Type: k, Count: n})
	}
	return nil
}

// Add counts one error of type t.
func (b *ByType) Add(t string, n int) {
	for i := range *b {
		if (*b)[i].Type == t {
			(*b)[i].Count += n
			return
		}
	}
	*b = append(*b, TypeCount{Type: t, Count: n})
}

// ErrorStats is getErrorStats: resolved errors count in total and by_type.
type ErrorStats struct {
	Total      int    `json:"total"`
	Unresolved int    `json:"unresolved"`
	ByType     ByType `json:"by_type"`
}

// CalculateErrorStats computes the stats of a bead's errors.
func CalculateErrorStats(entries []ErrorEntry) ErrorStats {
	s := ErrorStats{ByType: ByType{}}
	for _, e := range entries {
		s.Total++
		if !e.Resolved {
			s.Unresolved++
		}
		s.ByType.Add(e.ErrorType, 1)
	}
	return s
}

// Package ralph drives Ralph loops (a coding agent run again and again on
// one task, with fresh context, until a verify command passes) and records
// them in lore: the loop's start, each iteration's error, location, fix and
// test counts parsed from the verify output, and its completion, so lore
// extracts patterns and injects them into later loops.
package ralph

import (
	"regexp"
	"strconv"
	"strings"
)

// Verdict is what a verify command's output says: the first error's
// signature and location, and the test counts. Parsers are pure functions
// of the output text.
type Verdict struct {
	Tool      string `json:"tool,omitempty"`       // go test, pytest, jest, vitest, tsc, cargo
	ErrorType string `json:"error_type,omitempty"` // TypeError, TS2532, E0425, panic, TestFailure, CompileError
	Message   string `json:"error_message,omitempty"`
	Location  string `json:"location,omitempty"` // file:line
	Passed    int    `json:"tests_passed"`
	Failed    int    `json:"tests_failed"`
}

// HasError reports whether the output named an error.
func (v Verdict) HasError() bool { return v.ErrorType != "" || v.Message != "" }

// parsers are tried in order; the first that recognises the output wins.
var parsers = []func(string) (Verdict, bool){parseCargo, parseGoTest, parsePytest, parseVitest, parseJest, parseTsc}

// ParseVerify reads a verify command's output (stdout and stderr together)
// with the parser of the tool that wrote it. Output no parser recognises
// gives an empty Verdict.
func ParseVerify(out string) Verdict {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	out = ansi.ReplaceAllString(out, "")
	for _, p := range parsers {
		if v, ok := p(out); ok {
			return v
		}
	}
	return Verdict{}
}

// ansi matches terminal colour sequences (jest, vitest, cargo colour their output).
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// loc joins a file and a line.
func loc(file, line string) string {
	if file == "" {
		return ""
	}
	if line == "" {
		return file
	}
	return file + ":" + line
}

// --- go test ---------------------------------------------------------------

var (
	goCompile   = regexp.MustCompile(`(?m)^(?:# \S+\n)?\.?/?([^\s:]+\.go):(\d+)(?::\d+)?: (.+)$`)
	goFailLine  = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	goPassLine  = regexp.MustCompile(`(?m)^\s*--- PASS: `)
	goPkgLine   = regexp.MustCompile(`(?m)^(ok|FAIL|---|panic:|=== RUN)\s`)
	goPanic     = regexp.MustCompile(`(?m)^panic: (.+?)(?: \[recovered\])?$`)
	goFrame     = regexp.MustCompile(`(?m)^\t(\S+\.go):(\d+)`)
	goTestMsg   = regexp.MustCompile(`^\s+([\w./-]+\.go):(\d+): (.+)$`)
	goBuildFail = regexp.MustCompile(`(?m)^FAIL\s+\S+\s+\[(build|setup) failed\]`)
)

func parseGoTest(out string) (Verdict, bool) {
	if !goPkgLine.MatchString(out) && !goBuildFail.MatchString(out) {
		return Verdict{}, false
	}
	v := Verdict{Tool: "go test"}
	v.Passed = len(goPassLine.FindAllString(out, -1))
	fails := goFailLine.FindAllStringSubmatchIndex(out, -1)
	v.Failed = len(fails)
	switch {
	case goPanic.MatchString(out):
		m := goPanic.FindStringSubmatch(out)
		v.ErrorType, v.Message = "panic", m[1]
		for _, f := range goFrame.FindAllStringSubmatch(out[strings.Index(out, m[0]):], -1) {
			if !goRuntimeFrame(f[1]) {
				v.Location = loc(f[1], f[2])
				break
			}
		}
		if v.Failed == 0 {
			v.Failed = 1
		}
	case goBuildFail.MatchString(out) || (len(fails) == 0 && goCompile.MatchString(out)):
		m := goCompile.FindStringSubmatch(out)
		v.ErrorType = "CompileError"
		if m != nil {
			v.Message, v.Location = m[3], loc(m[1], m[2])
		} else {
			v.Message = "build failed"
		}
	case len(fails) > 0:
		// The message of the first failing test is the first "file.go:N:
		// text" line of its block: after "--- FAIL" (output without -v, and
		// subtests indented under it), or between "=== RUN" and "--- FAIL"
		// (streamed output of go test -v).
		f := fails[0]
		name := out[f[2]:f[3]]
		v.ErrorType, v.Message = "TestFailure", name
		m := firstGoTestMsg(out[f[1]:], true)
		if m == nil {
			if i := strings.Index(out, "=== RUN   "+name); i >= 0 && i < f[0] {
				m = firstGoTestMsg(out[i:f[0]], false)
			}
		}
		if m != nil {
			v.Message, v.Location = name+": "+m[3], loc(m[1], m[2])
		}
	}
	return v, true
}

// firstGoTestMsg is the first "file.go:N: text" line of s (with stop,
// before the next top-level line: a new test, a package result).
func firstGoTestMsg(s string, stop bool) []string {
	for i, ln := range strings.Split(s, "\n") {
		if stop && i > 0 && (strings.HasPrefix(ln, "--- ") || strings.HasPrefix(ln, "FAIL") || strings.HasPrefix(ln, "ok ") ||
			strings.HasPrefix(ln, "=== ")) {
			return nil
		}
		if m := goTestMsg.FindStringSubmatch(ln); m != nil {
			return m
		}
	}
	return nil
}

// goRuntimeFrame reports whether a stack frame's file is Go's own
// (runtime, testing), not the code under test.
func goRuntimeFrame(file string) bool {
	return strings.Contains(file, "/src/runtime/") || strings.Contains(file, "/src/testing/") ||
		strings.Contains(file, "/go/pkg/mod/golang.org/toolchain") || strings.HasPrefix(file, "runtime/")
}

// --- pytest ----------------------------------------------------------------

var (
	pySession  = regexp.MustCompile(`(?m)^=+ (test session starts|FAILURES|ERRORS|short test summary info|.*\b(passed|failed|error|errors)\b.* in [\d.]+s.*) =+$`)
	pyE        = regexp.MustCompile(`(?m)^E\s+(.+)$`)
	pyTyped    = regexp.MustCompile(`^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)|AssertionError): ?(.*)$`)
	pyLoc      = regexp.MustCompile(`(?m)^([\w./\\-]+\.py):(\d+): (\w+)`)
	pyCount    = regexp.MustCompile(`(\d+) (passed|failed|errors?)\b`)
	pySummary  = regexp.MustCompile(`(?m)^=+ (.*) in [\d.]+s.*=+$`)
	pyFailedID = regexp.MustCompile(`(?m)^(?:FAILED|ERROR) (\S+?)(?: - (.+))?$`)
)

func parsePytest(out string) (Verdict, bool) {
	if !pySession.MatchString(out) {
		return Verdict{}, false
	}
	v := Verdict{Tool: "pytest"}
	if ms := pySummary.FindAllStringSubmatch(out, -1); len(ms) > 0 {
		for _, c := range pyCount.FindAllStringSubmatch(ms[len(ms)-1][1], -1) {
			switch c[2] {
			case "passed":
				v.Passed = atoi(c[1])
			default:
				v.Failed += atoi(c[1])
			}
		}
	}
	if m := pyE.FindStringSubmatch(out); m != nil {
		text := strings.TrimSpace(m[1])
		if t := pyTyped.FindStringSubmatch(text); t != nil {
			v.ErrorType, v.Message = t[1], t[2]
		} else {
			v.ErrorType, v.Message = "AssertionError", text
		}
		// The location is the "file.py:N: Type" line closing the
		// traceback; the last one before the next test is the raising frame.
		rest := out[strings.Index(out, m[0]):]
		if l := pyLoc.FindStringSubmatch(rest); l != nil {
			v.Location = loc(l[1], l[2])
		}
	} else if m := pyFailedID.FindStringSubmatch(out); m != nil {
		v.ErrorType, v.Message = "TestFailure", strings.TrimSpace(m[1]+" "+m[2])
	}
	return v, true
}

// --- jest / vitest -----------------------------------------------------------

var (
	jestHead    = regexp.MustCompile(`(?m)^\s*(FAIL|PASS)\s+\S+`)
	jestTests   = regexp.MustCompile(`(?m)^Tests:\s+(.*)$`)
	jestBullet  = regexp.MustCompile(`(?m)^\s*● (.+)$`)
	jsErr       = regexp.MustCompile(`(?m)^\s*([A-Z]\w*(?:Error|Exception)): (.+)$`)
	jsExpect    = regexp.MustCompile(`(?m)^\s*(expect\(.+)$`)
	jsFrame     = regexp.MustCompile(`(?m)^\s*(?:at |❯ )(?:[^\n(]*?[ (])?([^\s()]+\.(?:[cm]?[jt]sx?)):(\d+):\d+\)?`)
	countPart   = regexp.MustCompile(`(\d+) (failed|passed)`)
	vitestTests = regexp.MustCompile(`(?m)^\s+Tests\s+(.*)$`)
	vitestMark  = regexp.MustCompile(`(?m)^\s*(Test Files|RUN\s+v\d)`)
)

func jsCounts(line string, v *Verdict) {
	for _, c := range countPart.FindAllStringSubmatch(line, -1) {
		if c[2] == "passed" {
			v.Passed = atoi(c[1])
		} else {
			v.Failed = atoi(c[1])
		}
	}
}

// jsError fills the error of a jest or vitest run from the first failure.
func jsError(v *Verdict, out string) {
	ei := jsErr.FindStringSubmatchIndex(out)
	xi := jsExpect.FindStringSubmatchIndex(out)
	switch {
	case ei != nil && (xi == nil || ei[0] < xi[0]):
		v.ErrorType, v.Message = out[ei[2]:ei[3]], strings.TrimSpace(out[ei[4]:ei[5]])
		out = out[ei[1]:]
	case xi != nil:
		v.ErrorType, v.Message = "AssertionError", strings.TrimSpace(out[xi[2]:xi[3]])
		out = out[xi[1]:]
	default:
		return
	}
	for _, f := range jsFrame.FindAllStringSubmatch(out, -1) {
		if !strings.Contains(f[1], "node_modules") {
			v.Location = loc(f[1], f[2])
			return
		}
	}
}

func parseJest(out string) (Verdict, bool) {
	if !jestTests.MatchString(out) && !(jestHead.MatchString(out) && jestBullet.MatchString(out)) {
		return Verdict{}, false
	}
	v := Verdict{Tool: "jest"}
	if m := jestTests.FindStringSubmatch(out); m != nil {
		jsCounts(m[1], &v)
	}
	if i := jestBullet.FindStringIndex(out); i != nil {
		jsError(&v, out[i[0]:])
	} else if v.Failed > 0 {
		jsError(&v, out)
	}
	return v, true
}

func parseVitest(out string) (Verdict, bool) {
	if !vitestMark.MatchString(out) {
		return Verdict{}, false
	}
	v := Verdict{Tool: "vitest"}
	if m := vitestTests.FindStringSubmatch(out); m != nil {
		jsCounts(m[1], &v)
	}
	if i := strings.Index(out, " FAIL "); i >= 0 {
		jsError(&v, out[i:])
	}
	return v, true
}

// --- tsc -------------------------------------------------------------------

var (
	tscParen  = regexp.MustCompile(`(?m)^([^\s(]+\.[cm]?tsx?)\((\d+),\d+\): error (TS\d+): (.+)$`)
	tscPretty = regexp.MustCompile(`(?m)^([^\s:]+\.[cm]?tsx?):(\d+):\d+ - error (TS\d+): (.+)$`)
)

func parseTsc(out string) (Verdict, bool) {
	m := tscParen.FindStringSubmatch(out)
	if m == nil {
		m = tscPretty.FindStringSubmatch(out)
	}
	if m == nil {
		return Verdict{}, false
	}
	return Verdict{Tool: "tsc", ErrorType: m[3], Message: m[4], Location: loc(m[1], m[2])}, true
}

// --- cargo -----------------------------------------------------------------

var (
	cargoErr     = regexp.MustCompile(`(?m)^error(?:\[(E\d+)\])?: (.+)$`)
	cargoArrow   = regexp.MustCompile(`(?m)^\s*--> ([^\s:]+):(\d+):\d+`)
	cargoResult  = regexp.MustCompile(`(?m)^test result: \w+\. (\d+) passed; (\d+) failed`)
	cargoRunning = regexp.MustCompile(`(?m)^running \d+ tests?$`)
	cargoPanic   = regexp.MustCompile(`(?m)^thread '([^']+)' panicked at (?:'(.+)', )?([^\s:]+):(\d+):\d+:?$`)
	cargoMark    = regexp.MustCompile(`(?m)^\s*(Compiling|Finished|Running) |^error(\[E\d+\])?: |^warning: `)
)

func parseCargo(out string) (Verdict, bool) {
	if !cargoRunning.MatchString(out) && !(cargoMark.MatchString(out) && (cargoArrow.MatchString(out) || cargoResult.MatchString(out))) {
		return Verdict{}, false
	}
	v := Verdict{Tool: "cargo"}
	for _, r := range cargoResult.FindAllStringSubmatch(out, -1) {
		v.Passed += atoi(r[1])
		v.Failed += atoi(r[2])
	}
	if m := cargoPanic.FindStringSubmatchIndex(out); m != nil {
		v.ErrorType = "panic"
		v.Location = loc(out[m[6]:m[7]], out[m[8]:m[9]])
		if m[4] >= 0 { // older format: the message is quoted on the line
			v.Message = out[m[4]:m[5]]
		} else if rest := strings.SplitN(out[m[1]:], "\n", 3); len(rest) > 1 {
			v.Message = strings.TrimSpace(rest[1])
		}
		return v, true
	}
	for _, m := range cargoErr.FindAllStringSubmatchIndex(out, -1) {
		msg := out[m[4]:m[5]]
		if strings.HasPrefix(msg, "could not compile") || strings.HasPrefix(msg, "aborting due to") {
			continue
		}
		v.ErrorType = "CompileError"
		if m[2] >= 0 {
			v.ErrorType = out[m[2]:m[3]]
		}
		v.Message = msg
		if a := cargoArrow.FindStringSubmatch(out[m[1]:]); a != nil {
			v.Location = loc(a[1], a[2])
		}
		break
	}
	return v, true
}

package ralph

import "testing"

func TestParseVerify(t *testing.T) {
	cases := []struct {
		name string
		out  string
		want Verdict
	}{
		{"go test failure without -v", `--- FAIL: TestParseToken (0.00s)
    token_test.go:42: expected nil error, got "token expired"
--- PASS: TestSign (0.00s)
FAIL
FAIL	example.com/auth	0.004s
FAIL
`, Verdict{Tool: "go test", ErrorType: "TestFailure", Message: `TestParseToken: expected nil error, got "token expired"`,
			Location: "token_test.go:42", Passed: 1, Failed: 1}},
		{"go test -v streamed subtests", `=== RUN   TestRetry
=== RUN   TestRetry/backoff
    retry_test.go:31: attempts = 2, want 3
--- FAIL: TestRetry (0.00s)
    --- FAIL: TestRetry/backoff (0.00s)
=== RUN   TestJitter
--- PASS: TestJitter (0.01s)
FAIL
exit status 1
FAIL	example.com/client	0.013s
`, Verdict{Tool: "go test", ErrorType: "TestFailure", Message: "TestRetry: attempts = 2, want 3",
			Location: "retry_test.go:31", Passed: 1, Failed: 2}},
		{"go test panic", `=== RUN   TestValidate
--- FAIL: TestValidate (0.00s)
panic: runtime error: invalid memory address or nil pointer dereference [recovered]
	panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x8 pc=0x4f2a1c]

goroutine 7 [running]:
testing.tRunner.func1.2({0x52c1a0, 0x6a9f30})
	/usr/local/go/src/testing/testing.go:1632 +0x230
panic({0x52c1a0?, 0x6a9f30?})
	/usr/local/go/src/runtime/panic.go:785 +0x132
example.com/auth.(*Token).Validate(...)
	/home/dev/auth/token.go:58 +0x1c
example.com/auth.TestValidate(0xc000130000)
	/home/dev/auth/token_test.go:12 +0x25
FAIL	example.com/auth	0.006s
`, Verdict{Tool: "go test", ErrorType: "panic", Message: "runtime error: invalid memory address or nil pointer dereference",
			Location: "/home/dev/auth/token.go:58", Failed: 1}},
		{"go build failure", `# example.com/auth [example.com/auth.test]
./token.go:58:9: undefined: parseClaims
./token.go:61:2: declared and not used: exp
FAIL	example.com/auth [build failed]
FAIL
`, Verdict{Tool: "go test", ErrorType: "CompileError", Message: "undefined: parseClaims", Location: "token.go:58"}},
		{"go test pass", "ok  \texample.com/auth\t0.004s\nok  \texample.com/client\t(cached)\n", Verdict{Tool: "go test"}},
		{"pytest AttributeError", `============================= test session starts ==============================
platform linux -- Python 3.12.1, pytest-8.0.0, pluggy-1.4.0
rootdir: /home/dev/svc
collected 12 items

tests/test_auth.py ..F.........                                          [100%]

=================================== FAILURES ===================================
________________________________ test_validate _________________________________

    def test_validate():
>       assert validate(None) is False

tests/test_auth.py:9: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

token = None

    def validate(token):
>       return len(token.strip()) > 0
E       AttributeError: 'NoneType' object has no attribute 'strip'

src/auth.py:42: AttributeError
=========================== short test summary info ============================
FAILED tests/test_auth.py::test_validate - AttributeError: 'NoneType' object has no attribute 'strip'
========================= 1 failed, 11 passed in 0.12s =========================
`, Verdict{Tool: "pytest", ErrorType: "AttributeError", Message: "'NoneType' object has no attribute 'strip'",
			Location: "src/auth.py:42", Passed: 11, Failed: 1}},
		{"pytest bare assert", `============================= test session starts ==============================
collected 3 items

tests/test_math.py F..                                                   [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(1, 2) == 4
E       assert 3 == 4
E        +  where 3 = add(1, 2)

tests/test_math.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_math.py::test_add - assert 3 == 4
========================= 1 failed, 2 passed in 0.03s ==========================
`, Verdict{Tool: "pytest", ErrorType: "AssertionError", Message: "assert 3 == 4", Location: "tests/test_math.py:5", Passed: 2, Failed: 1}},
		{"pytest all green", `============================= test session starts ==============================
collected 12 items

tests/test_auth.py ............                                          [100%]

============================== 12 passed in 0.08s ==============================
`, Verdict{Tool: "pytest", Passed: 12}},
		{"jest TypeError", ` FAIL  src/auth.test.ts
  validate
    ✓ accepts a token (3 ms)
    ✕ rejects a missing token (2 ms)

  ● validate › rejects a missing token

    TypeError: Cannot read properties of undefined (reading 'trim')

      40 | export function validate(token?: string): boolean {
      41 |   // tokens are opaque
    > 42 |   return token.trim().length > 0;
         |                ^
      43 | }

      at validate (src/auth.ts:42:16)
      at Object.<anonymous> (src/auth.test.ts:8:12)

Test Suites: 1 failed, 1 total
Tests:       1 failed, 5 passed, 6 total
Snapshots:   0 total
Time:        1.254 s
`, Verdict{Tool: "jest", ErrorType: "TypeError", Message: "Cannot read properties of undefined (reading 'trim')",
			Location: "src/auth.ts:42", Passed: 5, Failed: 1}},
		{"jest expect", ` FAIL  src/sum.test.js
  ● sum › adds two numbers

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 3

      3 | test('adds two numbers', () => {
    > 4 |   expect(sum(1, 2)).toBe(4);
        |                     ^

      at Object.toBe (src/sum.test.js:4:21)

Tests:       1 failed, 1 total
`, Verdict{Tool: "jest", ErrorType: "AssertionError", Message: "expect(received).toBe(expected) // Object.is equality",
			Location: "src/sum.test.js:4", Failed: 1}},
		{"vitest", `
 RUN  v1.6.0 /home/dev/web

 ❯ src/auth.test.ts (6 tests | 1 failed) 9ms
   ❯ validate > rejects a missing token

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/auth.test.ts > validate > rejects a missing token
TypeError: Cannot read properties of undefined (reading 'trim')
 ❯ validate src/auth.ts:42:16
     40| export function validate(token?: string): boolean {
     41|   // tokens are opaque
     42|   return token.trim().length > 0;
       |                ^
 ❯ src/auth.test.ts:8:12

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯

 Test Files  1 failed (1)
      Tests  1 failed | 5 passed (6)
   Start at  10:12:01
   Duration  412ms
`, Verdict{Tool: "vitest", ErrorType: "TypeError", Message: "Cannot read properties of undefined (reading 'trim')",
			Location: "src/auth.ts:42", Passed: 5, Failed: 1}},
		{"tsc plain", `src/auth.ts(42,16): error TS2532: Object is possibly 'undefined'.
src/api.ts(10,5): error TS2304: Cannot find name 'fetchUser'.
`, Verdict{Tool: "tsc", ErrorType: "TS2532", Message: "Object is possibly 'undefined'.", Location: "src/auth.ts:42"}},
		{"tsc pretty", `src/api.ts:10:5 - error TS2304: Cannot find name 'fetchUser'.

10     fetchUser(id);
       ~~~~~~~~~

Found 1 error in src/api.ts:10
`, Verdict{Tool: "tsc", ErrorType: "TS2304", Message: "Cannot find name 'fetchUser'.", Location: "src/api.ts:10"}},
		{"cargo compile error", `   Compiling auth v0.1.0 (/home/dev/auth)
error[E0425]: cannot find value ` + "`claims`" + ` in this scope
  --> src/token.rs:58:9
   |
58 |         claims.exp
   |         ^^^^^^ not found in this scope

For more information about this error, try ` + "`rustc --explain E0425`" + `.
error: could not compile ` + "`auth`" + ` (lib) due to 1 previous error
`, Verdict{Tool: "cargo", ErrorType: "E0425", Message: "cannot find value `claims` in this scope", Location: "src/token.rs:58"}},
		{"cargo test panic", `    Finished ` + "`test`" + ` profile [unoptimized + debuginfo] target(s) in 0.52s
     Running unittests src/lib.rs (target/debug/deps/auth-3f2a)

running 3 tests
test tests::signs ... ok
test tests::parses ... ok
test tests::expires ... FAILED

failures:

---- tests::expires stdout ----
thread 'tests::expires' panicked at src/lib.rs:12:9:
assertion ` + "`left == right`" + ` failed
  left: 4
 right: 5
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace


failures:
    tests::expires

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
`, Verdict{Tool: "cargo", ErrorType: "panic", Message: "assertion `left == right` failed", Location: "src/lib.rs:12", Passed: 2, Failed: 1}},
		{"cargo test old panic format", `running 1 test
test it_works ... FAILED

failures:

---- it_works stdout ----
thread 'it_works' panicked at 'called ` + "`Option::unwrap()`" + ` on a ` + "`None`" + ` value', src/main.rs:7:31

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out
`, Verdict{Tool: "cargo", ErrorType: "panic", Message: "called `Option::unwrap()` on a `None` value", Location: "src/main.rs:7", Failed: 1}},
		{"unknown output", "make: *** [Makefile:3: check] Error 1\n", Verdict{}},
		{"coloured jest", "\x1b[1m\x1b[31m FAIL \x1b[39m\x1b[22m src/a.test.js\n  \x1b[1m● a › b\x1b[22m\n\n    TypeError: x is not a function\n\n      at Object.<anonymous> (src/a.test.js:3:5)\n\n\x1b[1mTests:\x1b[22m       \x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m, 1 total\n",
			Verdict{Tool: "jest", ErrorType: "TypeError", Message: "x is not a function", Location: "src/a.test.js:3", Failed: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseVerify(c.out); got != c.want {
				t.Errorf("ParseVerify:\n got  %+v\n want %+v", got, c.want)
			}
		})
	}
}

func TestFailureMode(t *testing.T) {
	e := func(typ, msg string) Verdict { return Verdict{ErrorType: typ, Message: msg} }
	cases := []struct {
		hist []Verdict
		want string
	}{
		{nil, "infinite_loop"},
		{[]Verdict{e("A", "x"), e("A", "x")}, "infinite_loop"},
		{[]Verdict{e("B", "y"), e("A", "x"), e("A", "x"), e("A", "x")}, "repeated_same_error"},
		{[]Verdict{e("A", "x"), e("A", "x"), e("B", "x")}, "infinite_loop"},
		{[]Verdict{{}, {}, {}}, "infinite_loop"},
	}
	for _, c := range cases {
		if got := FailureMode(c.hist); got != c.want {
			t.Errorf("FailureMode(%v) = %s, want %s", c.hist, got, c.want)
		}
	}
}

func TestDescribeNumstat(t *testing.T) {
	d := DescribeNumstat("1\t1\tretry.go\n12\t0\tinternal/backoff.go\n-\t-\tlogo.png\n")
	if d.Description != "edit retry.go (+1 -1), internal/backoff.go (+12), logo.png (binary)" || len(d.Files) != 3 {
		t.Fatalf("DescribeNumstat = %+v", d)
	}
	if d := DescribeNumstat(""); d.Description != "" || d.Files != nil {
		t.Fatalf("empty numstat = %+v", d)
	}
}

package main

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"
)

func TestApplyConfigSets(t *testing.T) {
	out, err := applyConfigSets([]byte(`{"a":{"b":1},"c":"x"}`), []string{"a.b=2.5", "c=hello world", "d=true", `e="7"`})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"a.b": "2.5", "c": "hello world", "d": "true", "e": "7"} {
		if got := gjson.GetBytes(out, path).String(); got != want {
			t.Errorf("%s = %q, want %q (doc %s)", path, got, want, out)
		}
	}
	if gjson.GetBytes(out, "e").Type != gjson.String {
		t.Errorf(`a quoted value stays a string: %s`, out)
	}
	for _, bad := range []string{"novalue", "=3", " =3"} {
		if _, err := applyConfigSets(nil, []string{bad}); !errors.Is(err, errBadInput) {
			t.Errorf("--set %q: err = %v, want errBadInput", bad, err)
		}
	}
}

package knowledge

import (
	"reflect"
	"testing"

	json "github.com/goccy/go-json"
)

// mapReader is a Reader over a map (no scans).
type mapReader map[string][]byte

func (r mapReader) Get(k []byte) ([]byte, bool, error) {
	v, ok := r[string(k)]
	return v, ok, nil
}

func (r mapReader) Scan([]byte, func(k, v []byte) error) error { return nil }

// TestLoadConfigLeavesBaseAlone: the configuration read from a store never
// writes into the base it starts from (a Model's base is shared by every
// fold and query), whatever the stored document sets. Every slice of
// Config gets a value of the same length as the base's and another
// content, so a decoder filling the base's own backing array shows (a map
// or pointer field stops the test until it is handled here).
func TestLoadConfigLeavesBaseAlone(t *testing.T) {
	base := DefaultConfig()
	stored := DefaultConfig()
	bv, sv := reflect.ValueOf(&base).Elem(), reflect.ValueOf(&stored).Elem()
	refs := 0
	for i := range bv.NumField() {
		b, s := bv.Field(i), sv.Field(i)
		switch b.Kind() {
		case reflect.Slice:
			refs++
			if b.Len() == 0 {
				b.Set(reflect.Append(reflect.MakeSlice(b.Type(), 0, 4), reflect.Zero(b.Type().Elem())))
			}
			n := reflect.MakeSlice(b.Type(), b.Len(), b.Len())
			for j := range b.Len() {
				e := reflect.New(b.Type().Elem()).Elem()
				if e.Kind() == reflect.String {
					e.SetString("stored")
				}
				n.Index(j).Set(e)
			}
			s.Set(n)
		case reflect.Map, reflect.Pointer:
			t.Fatalf("Config.%s is a %s: give it a case here", bv.Type().Field(i).Name, b.Kind())
		}
	}
	if refs == 0 {
		t.Fatal("Config has no slice: the test checks nothing")
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := LoadConfig(mapReader{keyConfig: raw}, base)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, stored) {
			t.Fatalf("loaded %+v, stored %+v", got, stored)
		}
	}
	if after, _ := json.Marshal(base); string(after) != string(before) {
		t.Fatalf("LoadConfig changed its base: %s, was %s", after, before)
	}
}

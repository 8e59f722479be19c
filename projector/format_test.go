package projector_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
)

func TestFormatNewer(t *testing.T) {
	const want = "store=1;learning=3;knowledge=2"
	cases := []struct {
		name, have string
		newer      bool
		why        string // a part of the reason
	}{
		{"a new store is not newer", "", false, ""},
		{"the same format is not newer", want, false, ""},
		{"a lower model version is older", "store=1;learning=2;knowledge=2", false, ""},
		{"a lower store layout is older", "store=0;learning=3;knowledge=2", false, ""},
		{"a model this lore adds is older", "store=1;learning=3", false, ""},
		{"models in another order are compared by name", "store=1;knowledge=2;learning=3", false, ""},
		{"a higher store layout is newer", "store=2;learning=3;knowledge=2", true, "store layout 2 > 1"},
		{"a higher store layout with older models is newer", "store=2;learning=1", true, "store layout"},
		{"a higher model version is newer", "store=1;learning=4;knowledge=2", true, `model "learning" version 4 > 3`},
		{"a higher version of one model wins over a lower one of another", "store=1;learning=1;knowledge=9", true, `"knowledge"`},
		{"a model this lore does not know is newer", "store=1;learning=3;knowledge=2;graph=1", true, `model "graph" is unknown`},
		{"an unparseable format is refused", "v2:learning", true, "not one this lore can read"},
		{"a non-numeric version is refused", "store=1;learning=x", true, "not one this lore can read"},
		{"a missing store part is refused", "learning=3", true, "not one this lore can read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			newer, why := projector.FormatNewer(c.have, want)
			if newer != c.newer {
				t.Fatalf("FormatNewer(%q, %q) = %v (%s), want %v", c.have, want, newer, why, c.newer)
			}
			if !strings.Contains(why, c.why) {
				t.Fatalf("reason %q does not contain %q", why, c.why)
			}
		})
	}
}

type versioned struct {
	name    string
	version int
}

func (m versioned) Name() string { return m.name }
func (m versioned) Version() int { return m.version }
func (m versioned) Fold(projector.Tx, *events.Event, events.Payload) error {
	return nil
}

func TestCheckFormatRefusesAFutureStoreAndKeepsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pebble")
	st, err := projector.OpenStore(dir, projector.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	future := "store=1;learning=9"
	if err := st.Reset(future, 0); err != nil {
		t.Fatal(err)
	}
	models := []projector.Model{versioned{"learning", 3}}
	_, err = projector.CheckFormat(st, models)
	if !errors.Is(err, projector.ErrFutureFormat) {
		t.Fatalf("CheckFormat = %v, want ErrFutureFormat", err)
	}
	for _, part := range []string{future, projector.FormatVersion(models), dir, "upgrade lore"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
	if have, _ := st.StoredVersion(); have != future {
		t.Fatalf("stored format after refusal = %q, want %q unchanged", have, future)
	}
}

package knowledge_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/loredev/lore/projector/knowledge"
	"github.com/loredev/lore/schemas"
)

// TestFormatsAreTheSchemas: the formats the API accepts are the enum of
// the event that records them.
func TestFormatsAreTheSchemas(t *testing.T) {
	raw, err := schemas.FS.ReadFile("knowledge.submitted.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Import struct {
				Properties struct {
					Format struct {
						Enum []string `json:"enum"`
					} `json:"format"`
				} `json:"properties"`
			} `json:"import"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	got, want := slices.Sorted(slices.Values(knowledge.Formats)), slices.Sorted(slices.Values(s.Properties.Import.Properties.Format.Enum))
	if !slices.Equal(got, want) {
		t.Fatalf("knowledge.Formats %v, the schema's import.format enum %v", got, want)
	}
}

package events

import (
	"fmt"
	"testing"
)

// The memo of clean verdicts answers for the exact type and bytes it was
// given, and forgets only the oldest generation: the verdictsMax verdicts
// given last are always remembered, however many came before.
func TestVerdictsRememberTheLatestExactly(t *testing.T) {
	var v verdicts
	data := func(i int) []byte { return fmt.Appendf(nil, `{"bead_id":"b%d"}`, i) }
	const n = 3*verdictsMax + 17
	for i := range n {
		v.add("outcome.recorded/v1", data(i))
	}
	for i := n - verdictsMax; i < n; i++ {
		if !v.has("outcome.recorded/v1", data(i)) {
			t.Fatalf("verdict %d of %d forgotten (the last %d must stay)", i, n, verdictsMax)
		}
	}
	if v.has("outcome.recorded/v1", data(0)) {
		t.Fatal("the first verdict is still held after three generations: the memo is unbounded")
	}
	if v.has("error.recorded/v1", data(n-1)) {
		t.Fatal("a verdict on the same bytes under another type was taken for this one")
	}
	if v.has("outcome.recorded/v1", append(data(n-1), ' ')) {
		t.Fatal("a verdict was taken for other bytes")
	}
}

// A payload that fails its check is refused however many clean payloads
// of its type were checked before it, and a clean verdict of one type does
// not pass the same bytes under another.
func TestCleanVerdictsDoNotPassOtherData(t *testing.T) {
	clean := []byte(`{"bead_id":"b","duration_ms":1,"retry_count":0,"success":true}`)
	for range 3 {
		if _, err := validateData("outcome.recorded/v1", clean); err != nil {
			t.Fatalf("clean payload refused: %v", err)
		}
	}
	if _, err := validateData("error.recorded/v1", clean); err == nil {
		t.Fatal("an outcome's bytes passed as an error.recorded/v1 payload after the outcome's verdict")
	}
	secret := []byte(`{"bead_id":"b","error_type":"validation","message":"login with ghp_3cxLmAxzJLJenuHjDUrhhjeyxG4jDPMRCxGg failed"}`)
	for range 2 {
		if _, err := validateData("error.recorded/v1", secret); err == nil {
			t.Fatal("a credential in an error message passed the check without redaction")
		}
	}
}

package events

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealTestAWSKey is a credential the check refuses in free text.
const sealTestAWSKey = "AKIAQ7LMZ3RT5XK2WB4N"

// TestSealSkipsOnlyTheCheckOfTheSealedBytes: a verified seal spares the
// check of exactly the bytes and subject it was made for, under its key
// and executable; any other bytes, subject, key, executable or seal are
// checked in full. The sealed message here holds a credential (only a
// holder of the key can make such a seal), so a check that runs refuses
// it and a check that was skipped accepts it.
func TestSealSkipsOnlyTheCheckOfTheSealedBytes(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	fp := []byte("executable-a")
	s, err := newSealer(key, fp)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"seal-1","type":"error.recorded/v1","time":"2026-01-01T00:00:00Z","project":"default","subject":"bd-1","data":{"bead_id":"bd-1","error_type":"tool_failure","message":"token ` + sealTestAWSKey + `"}}`)
	subj := AggregateSubject("default", "bead", "bd-1")
	seal := s.Seal(subj, body)
	check := func(s *Sealer, subject string, body []byte, seal string) error {
		ev, err := Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		_, err = CheckSealed(s, subject, body, seal, ev)
		return err
	}
	if err := check(s, subj, body, seal); err != nil {
		t.Fatalf("the sealed bytes were checked again: %v", err)
	}

	otherKey, _ := newSealer(bytes.Repeat([]byte{8}, 32), fp)
	otherExe, _ := newSealer(key, []byte("executable-b"))
	flipped := bytes.Replace(body, []byte("tool_failure"), []byte("tool_failurf"), 1)
	for _, c := range []struct {
		name    string
		s       *Sealer
		subject string
		body    []byte
		seal    string
	}{
		{"no sealer", nil, subj, body, seal},
		{"another key", otherKey, subj, body, seal},
		{"another executable", otherExe, subj, body, seal},
		{"other bytes", s, subj, flipped, seal},
		{"another subject", s, AggregateSubject("default", "bead", "bd-2"), body, seal},
		{"no seal", s, subj, body, ""},
		{"a truncated seal", s, subj, body, seal[:len(seal)-1]},
		{"a seal too long", s, subj, body, seal + "A"},
		{"not base64", s, subj, body, strings.Repeat("*", len(seal))},
		{"the seal of other bytes", s, subj, body, s.Seal(subj, flipped)},
	} {
		err := check(c.s, c.subject, c.body, c.seal)
		if !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: %v, want the event checked and refused", c.name, err)
		}
	}

	// A clean message checks the same with its seal or without.
	clean := bytes.Replace(body, []byte("token "+sealTestAWSKey), []byte("exit status 1"), 1)
	if err := check(s, subj, clean, s.Seal(subj, clean)); err != nil {
		t.Fatal(err)
	}
	if err := check(s, subj, clean, ""); err != nil {
		t.Fatal(err)
	}
}

// TestSealKeyFile: the key is made once, readable by its owner only, and
// found again; a short key file is refused, naming it.
func TestSealKeyFile(t *testing.T) {
	dir := t.TempDir()
	if k, err := LoadSealKey(dir, false); err != nil || k != nil {
		t.Fatalf("no key and no create: %v %v, want nothing", k, err)
	}
	k1, err := LoadSealKey(dir, true)
	if err != nil || len(k1) != 32 {
		t.Fatalf("create: %d bytes, %v", len(k1), err)
	}
	k2, err := LoadSealKey(dir, true)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: %v, a different key: %v", err, !bytes.Equal(k1, k2))
	}
	fi, err := os.Stat(filepath.Join(dir, SealKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(dir, SealKeyFile), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSealKey(dir, true); err == nil || !strings.Contains(err.Error(), SealKeyFile) {
		t.Errorf("short key: %v, want an error naming the file", err)
	}
	if _, err := NewSealer(k1); err != nil {
		t.Errorf("NewSealer of this test's executable: %v", err)
	}
}

package events

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// SealHeader carries a message's seal (Sealer).
const SealHeader = "Lore-Seal"

// A Sealer proves, to the projectors of the processes holding its key,
// that a message passed the appender's check (Check, with redaction) in a
// process running this very executable: the appender puts in SealHeader
// an HMAC-SHA256, under the key, of the executable's SHA-256, the subject
// and the message's bytes. A message whose seal verifies is decoded
// without checking it again (CheckSealed): a rebuild or an audit of a log
// the node wrote itself does not re-run the schema and credential checks
// on every event.
//
// INVARIANT: a verified seal means these bytes on this subject passed
// check under these rules. The key never leaves the data folder, so a raw
// publisher cannot seal; copying a seal onto other bytes or another
// subject fails to verify; another executable (an upgrade, another
// build, whose rules may differ) does not verify it, and checks in full.
type Sealer struct {
	key  []byte
	fp   []byte // the executable's fingerprint
	pool sync.Pool
}

// sealBytes is the length of a seal's MAC (truncated HMAC-SHA256: 128 bits).
const sealBytes = 16

// NewSealer returns a sealer under key (at least 32 bytes). It fails when
// the running executable cannot be read: then nothing is sealed and every
// message is checked in full.
func NewSealer(key []byte) (*Sealer, error) {
	fp, err := executableFingerprint()
	if err != nil {
		return nil, err
	}
	return newSealer(key, fp)
}

func newSealer(key, fp []byte) (*Sealer, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("seal key: %d bytes, want at least 32", len(key))
	}
	s := &Sealer{key: append([]byte(nil), key...), fp: append([]byte(nil), fp...)}
	s.pool.New = func() any { return hmac.New(sha256.New, s.key) }
	return s, nil
}

// Seal returns the seal of body stored on subject.
func (s *Sealer) Seal(subject string, body []byte) string {
	var sum [sha256.Size]byte
	s.mac(subject, body, sum[:0])
	return base64.RawURLEncoding.EncodeToString(sum[:sealBytes])
}

// Verify reports whether seal is body's seal on subject under s's key.
// A nil Sealer verifies nothing.
func (s *Sealer) Verify(subject string, body []byte, seal string) bool {
	if s == nil || base64.RawURLEncoding.DecodedLen(len(seal)) != sealBytes {
		return false
	}
	var got [sealBytes]byte
	if n, err := base64.RawURLEncoding.Decode(got[:], []byte(seal)); err != nil || n != sealBytes {
		return false
	}
	var sum [sha256.Size]byte
	s.mac(subject, body, sum[:0])
	return hmac.Equal(got[:], sum[:sealBytes])
}

func (s *Sealer) mac(subject string, body, out []byte) {
	h := s.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(s.fp)
	h.Write([]byte(subject))
	h.Write([]byte{0})
	h.Write(body)
	h.Sum(out)
	s.pool.Put(h)
}

// CheckSealed is CheckStored of a message whose bytes body decoded to ev,
// read with its seal header: when s verifies the seal, ev is only decoded
// (the appender checked these bytes on this subject); otherwise it is
// checked in full, whatever the header says.
func CheckSealed(s *Sealer, subject string, body []byte, seal string, ev *Event) (Payload, error) {
	if seal != "" && s.Verify(subject, body, seal) {
		return DecodeData(ev)
	}
	return CheckStored(subject, ev)
}

var fingerprint struct {
	once sync.Once
	sum  []byte
	err  error
}

// executableFingerprint is the SHA-256 of the running executable, read
// once per process.
func executableFingerprint() ([]byte, error) {
	fingerprint.once.Do(func() {
		path, err := os.Executable()
		if err != nil {
			fingerprint.err = fmt.Errorf("seal: executable: %w", err)
			return
		}
		f, err := os.Open(path)
		if err != nil {
			fingerprint.err = fmt.Errorf("seal: executable: %w", err)
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			fingerprint.err = fmt.Errorf("seal: read executable: %w", err)
			return
		}
		fingerprint.sum = h.Sum(nil)
	})
	return fingerprint.sum, fingerprint.err
}

// SealKeyFile is the seal key's file in a data folder.
const SealKeyFile = "seal.key"

// LoadSealKey returns the seal key of the data folder dir, creating it
// (32 random bytes, readable by the owner only) when create is set and
// there is none; without create, a missing key is (nil, nil).
func LoadSealKey(dir string, create bool) ([]byte, error) {
	path := filepath.Join(dir, SealKeyFile)
	key, err := os.ReadFile(path)
	switch {
	case err == nil:
		if len(key) < 32 {
			return nil, fmt.Errorf("seal key %s: %d bytes, want at least 32 (delete it to make a new one)", path, len(key))
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("seal key: %w", err)
	case !create:
		return nil, nil
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	// Written aside and linked in place: a process reading the folder
	// sees no key or the whole key, and two creating at once keep one.
	tmp, err := os.CreateTemp(dir, SealKeyFile+".*")
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("seal key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadSealKey(dir, false)
		}
		return nil, fmt.Errorf("seal key: %w", err)
	}
	return key, nil
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Where a client finds the lore it talks to. A client never dials an
// address nobody recorded (no default port is assumed): it takes the first
// of
//
//  1. --nats URL, or LORE_NATS;
//  2. --data DIR, or LORE_DATA: the URL `lore serve --data DIR` wrote to
//     DIR/nats.url;
//  3. the serve record of the working directory or its nearest parent:
//     `lore serve` records, per user, the URL of its embedded NATS under the
//     directory it was started in (runtimeDir), so `lore serve --data
//     ./lore-data` in a folder serves every command run in that folder or
//     below it;
//  4. the URL in the default data folder's nats.url (plain `lore serve`).
//
// A serve record names the NATS server's id: a client that reaches a
// server with another id (the serve stopped and something else took the
// port) refuses to talk to it, saying which record led there.

// serveRecord is what `lore serve` records for clients of its working
// directory. NB: must not change incompatibly: other lore versions read it.
type serveRecord struct {
	URL      string `json:"url"`
	ServerID string `json:"server_id"`
	Data     string `json:"data"`
	Dir      string `json:"dir"`
	PID      int    `json:"pid"`
}

// runtimeDir is the per-user folder of serve records: $XDG_RUNTIME_DIR/lore,
// else the user's cache folder's lore/run, else a per-user temp folder.
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "lore")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "lore", "run")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("lore-%d", os.Getuid()))
}

// recordPath is the serve record of the working directory dir (absolute,
// symlinks resolved).
func recordPath(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return filepath.Join(runtimeDir(), "serve-"+hex.EncodeToString(h[:8])+".json")
}

// workDir is the absolute working directory with symlinks resolved, so a
// folder reached by two paths has one record.
func workDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	return wd, nil
}

// writeServeRecord records rec for clients started in the working
// directory, atomically; the returned func removes it if it is still this
// serve's (a later serve from the same folder replaced it otherwise).
func writeServeRecord(rec serveRecord) (remove func(), err error) {
	wd, err := workDir()
	if err != nil {
		return func() {}, fmt.Errorf("working directory: %w", err)
	}
	rec.Dir = wd
	if abs, err := filepath.Abs(rec.Data); err == nil {
		rec.Data = abs
	}
	path := recordPath(wd)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return func() {}, fmt.Errorf("serve record folder: %w", err)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return func() {}, err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return func() {}, fmt.Errorf("write serve record: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return func() {}, fmt.Errorf("write serve record: %w", err)
	}
	return func() {
		if cur, ok := readServeRecord(path); ok && cur.ServerID == rec.ServerID && cur.PID == rec.PID {
			_ = os.Remove(path)
		}
	}, nil
}

func readServeRecord(path string) (serveRecord, bool) {
	var rec serveRecord
	raw, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(raw, &rec) != nil || rec.URL == "" {
		return rec, false
	}
	return rec, true
}

// target is the NATS a client dials and why.
type target struct {
	url string
	// from says where the URL came from, for errors.
	from string
	// serverID, when set, is the id the server reached must have.
	serverID string
}

// errNoLore is returned when no lore was found to talk to.
var errNoLore = errors.New("no lore serving found")

// dataExplicit reports whether the data folder was chosen (--data,
// LORE_DATA, or set in code on a factory without flags) rather than
// defaulted.
func (f *Factory) dataExplicit() bool {
	if f.globalFlags == nil {
		return f.DataDir != ""
	}
	return os.Getenv("LORE_DATA") != "" || f.globalFlags.Changed("data")
}

// resolveTarget applies the lookup order above.
func (f *Factory) resolveTarget() (target, error) {
	if f.NatsURL != "" {
		return target{url: f.NatsURL, from: "--nats/LORE_NATS"}, nil
	}
	fromData := func(dir string) (target, bool) {
		b, err := os.ReadFile(filepath.Join(dir, urlFile))
		if err != nil {
			return target{}, false
		}
		u := strings.TrimSpace(string(b))
		return target{url: u, from: filepath.Join(dir, urlFile)}, u != ""
	}
	if f.dataExplicit() {
		if t, ok := fromData(f.DataDir); ok {
			return t, nil
		}
		return target{}, fmt.Errorf("%w in %s (no %s): start `lore serve --data %s`, or pass --nats URL",
			errNoLore, f.DataDir, urlFile, f.DataDir)
	}
	var looked []string
	if wd, err := workDir(); err == nil {
		for dir := wd; ; {
			p := recordPath(dir)
			if rec, ok := readServeRecord(p); ok {
				return target{url: rec.URL, serverID: rec.ServerID,
					from: fmt.Sprintf("the lore serve started in %s (data %s, pid %d; record %s)", rec.Dir, rec.Data, rec.PID, p)}, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		looked = append(looked, "serve records of "+wd+" and its parents in "+runtimeDir())
	}
	def := f.DataDir
	if def == "" {
		def = defaultDataDir()
	}
	if t, ok := fromData(def); ok {
		return t, nil
	}
	looked = append(looked, filepath.Join(def, urlFile))
	return target{}, fmt.Errorf("%w (looked at %s): start `lore serve`, or pass --data DIR or --nats URL",
		errNoLore, strings.Join(looked, ", "))
}

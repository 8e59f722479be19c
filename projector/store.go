package projector

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrStorage marks failures of the Pebble store itself; they are never
// poison and stop the runtime (which retries with backoff).
var ErrStorage = errors.New("lore: read-model storage failure")

// Key layout. NB: must not change: it is the on-disk format of read models.
const (
	modelPrefix   = "m/"             // m/<model>/<key>
	sysCheckpoint = "sys/checkpoint" // uint64 BE: last stream sequence folded
	sysVersion    = "sys/version"    // read-model format, see formatVersion
	sysLiveFrom   = "sys/live-from"  // uint64 BE: events <= this were folded in rebuild mode
	sysOutbox     = "sys/outbox/"    // sys/outbox/<seq BE 8><n BE 4> → JSON outboxEntry
	sysEmitted    = "sys/emitted/"   // reserved
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// InMemory keeps the store in memory (audit replays, tests).
	InMemory bool
	// CacheBytes is Pebble's memory: its block cache and, carved out of
	// it, its memtables (Pebble reserves each memtable's size in the block
	// cache until the memtable is released). The 8 MiB default makes reads
	// 4–6× slower, so lore sets it explicitly. Default 256 MiB.
	//
	// INVARIANT: a memtable is an eighth of it (memTableSize), so the live
	// memtable, one flushing and one still read leave 5/8 to blocks. (With
	// 64 MiB memtables in a 128 MiB cache, the live one and one flushed but
	// still read took the whole cache and every read went to disk.)
	CacheBytes int64
	// Sync commits each batch with an fsync of Pebble's WAL.
	Sync bool
	// Ephemeral is a store that lives for one question (an audit): no
	// automatic compactions, which would only compete with its fold, and
	// no WAL (what is not flushed when it closes is lost; an audit
	// checkpoint is flushed before it closes, so it is tables alone).
	// INVARIANT: its writes never stall for level-0 tables (nothing would
	// ever compact them away): an audit copy of a checkpoint taken while
	// the live store's level 0 was deep writes all the same.
	Ephemeral bool
	// ReadOnly opens an existing store without writing to it.
	ReadOnly bool
	// FS, when set, is the filesystem the store is written through (the
	// OS's when nil; InMemory takes precedence).
	FS vfs.FS
	// ShareCache, when set, is an open store whose block cache this one
	// shares (CacheBytes is then its): one budget for the stores of a
	// process that folds into a second store while the first stays open
	// (a rebuild beside the live read model). Each store's memtables are
	// still sized by the budget and reserved in the shared cache.
	ShareCache *Store
}

// Store is a Pebble database holding read models and the projector's
// checkpoint. It is safe for concurrent readers; only one folder writes.
type Store struct {
	db         *pebble.DB
	dir        string // "" in memory
	sync       bool
	noWAL      bool          // Ephemeral: nothing to sync
	cache      *pebble.Cache // referenced by db while it is open
	cacheBytes int64
	activity   *storeActivity
	opts       *pebble.Options
	// deltas records the commits for audits (RecordDeltas; nil: not
	// recorded).
	deltas atomic.Pointer[deltaRecorder]
	// ids is the filter of the event id index (idfilter.go; nil: none
	// yet), idMisses the reads of the index made without one.
	ids      atomic.Pointer[idFilter]
	idMisses atomic.Uint64
}

// storeActivity counts the background work Pebble began in a store, and
// how much of it is under way.
type storeActivity struct {
	flushes, compactions atomic.Uint64
	running              atomic.Int64
}

// Activity is the background work of a store: the memtable flushes
// (forced ones included) and compactions begun since it was opened, and
// how many of them are running now.
type Activity struct {
	Flushes, Compactions uint64
	Running              int64
}

// Activity returns the store's background work so far.
func (s *Store) Activity() Activity {
	return Activity{Flushes: s.activity.flushes.Load(), Compactions: s.activity.compactions.Load(),
		Running: s.activity.running.Load()}
}

// syncOpts are the write options of the store's own durable writes.
func (s *Store) syncOpts() *pebble.WriteOptions {
	if s.noWAL {
		return pebble.NoSync
	}
	return pebble.Sync
}

// OpenStore opens (creating) the Pebble store in dir.
func OpenStore(dir string, o StoreOptions) (*Store, error) {
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	var cache *pebble.Cache
	if o.ShareCache != nil {
		// The open store holds a reference: the cache outlives this Open,
		// which takes one of its own.
		cache, o.CacheBytes = o.ShareCache.cache, o.ShareCache.cacheBytes
	} else {
		cache = pebble.NewCache(o.CacheBytes)
		defer cache.Unref() // the DB holds its own reference
	}
	opts := &pebble.Options{
		Cache:              cache,
		MemTableSize:       memTableSize(o.CacheBytes),
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		DisableWAL:         o.Ephemeral,

		DisableAutomaticCompactions: o.Ephemeral,
		ReadOnly:                    o.ReadOnly,
	}
	act := &storeActivity{}
	opts.EventListener = &pebble.EventListener{
		FlushBegin:      func(pebble.FlushInfo) { act.flushes.Add(1); act.running.Add(1) },
		FlushEnd:        func(pebble.FlushInfo) { act.running.Add(-1) },
		CompactionBegin: func(pebble.CompactionInfo) { act.compactions.Add(1); act.running.Add(1) },
		CompactionEnd:   func(pebble.CompactionInfo) { act.running.Add(-1) },
	}
	// Bloom filters on every level (L1+ inherit L0's): the id index is
	// probed once per folded event, almost always for an id it does not
	// hold, which a filter answers without reading the table's blocks.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// Level 0 holds flushed memtables that a compaction soon rewrites:
	// they are written uncompressed (the flush skips Snappy, and the
	// compaction that reads them skips its decoding); the levels below
	// keep Snappy. (Pebble copies a level's compression to the levels
	// below it unless they set their own.)
	opts.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	opts.Levels[1].Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
	// An L0 compaction waits for 8 sublevels instead of 4: each rewrite
	// of the base level then takes in twice as much of L0 (half the
	// rewrites of the same keys under a steady load), and a point read
	// of an absent key stays cheap (bloom filters). Writes stop at 24.
	opts.L0CompactionThreshold = 8
	opts.L0StopWritesThreshold = 24
	if o.Ephemeral {
		opts.L0StopWritesThreshold = math.MaxInt32
	}
	opts.FS = o.FS
	if o.InMemory {
		opts.FS = vfs.NewMem()
		dir = ""
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: open pebble %q: %v", ErrStorage, dir, err)
	}
	// The options with Pebble's defaults filled in, as Open fills them in
	// its own copy: what the delta tables are written with.
	wopts := opts.Clone()
	wopts.EnsureDefaults()
	return &Store{db: db, dir: dir, sync: o.Sync, noWAL: o.Ephemeral, cache: cache, cacheBytes: o.CacheBytes, activity: act, opts: wopts}, nil
}

// memTableSize is an eighth of the cache, between 4 and 64 MiB (32 MiB
// for the default cache). A batch of more than half a memtable is not
// copied into it but queued whole as its own flushable (an extra flush
// and L0 file per commit): with 16 MiB memtables, the projector's commits
// of 1000 events under a 2000 events/s load were (63 MB of batches queued
// so in a heap profile), hence 32 MiB by default.
func memTableSize(cacheBytes int64) uint64 {
	return uint64(min(max(cacheBytes/8, 4<<20), 64<<20))
}

// Dir is the store's folder ("" in memory).
func (s *Store) Dir() string { return s.dir }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the Pebble database to snapshots (checkpoints).
func (s *Store) DB() *pebble.DB { return s.db }

// Checkpoint returns the last stream sequence folded and committed.
func (s *Store) Checkpoint() (uint64, error) { return s.getUint(sysCheckpoint) }

// LiveFrom returns the sequence up to which events were folded in rebuild
// mode (no announcements).
func (s *Store) LiveFrom() (uint64, error) { return s.getUint(sysLiveFrom) }

func (s *Store) getUint(key string) (uint64, error) {
	v, closer, err := s.db.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: get %s: %v", ErrStorage, key, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s: bad length %d", ErrStorage, key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// ModelKeyPrefix is the prefix of a model's keys among the store's (what
// a Delta's keys carry before the model's own).
func ModelKeyPrefix(model string) string { return modelPrefix + model + "/" }

// Model returns a Reader over one model's committed keys.
func (s *Store) Model(name string) Reader {
	return dbReader{r: s.db, prefix: []byte(modelPrefix + name + "/")}
}

// Snapshot is the store's committed state at one instant, read while the
// store goes on: every read of it sees the same batches, whatever is
// committed after. Close releases it.
type Snapshot struct{ snap *pebble.Snapshot }

// Snapshot takes a snapshot of the committed state.
func (s *Store) Snapshot() *Snapshot { return &Snapshot{snap: s.db.NewSnapshot()} }

// Model returns a Reader over one model's keys in the snapshot.
func (s *Snapshot) Model(name string) Reader {
	return dbReader{r: s.snap, prefix: []byte(modelPrefix + name + "/")}
}

// AuditMark reads the snapshot's mark: its checkpoint is the sequence its
// state folds the log to.
func (s *Snapshot) AuditMark() (AuditMark, error) { return auditMark(s.snap) }

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.snap.Close() }

// dbReader reads one model's keys from a pebble.Reader (the DB or a snapshot).
type dbReader struct {
	r      pebble.Reader
	prefix []byte
}

func (d dbReader) Get(key []byte) ([]byte, bool, error) {
	v, closer, err := d.r.Get(append(append([]byte{}, d.prefix...), key...))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: get: %v", ErrStorage, err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, true, nil
}

func (d dbReader) Scan(prefix []byte, fn func(k, v []byte) error) error {
	full := append(append([]byte{}, d.prefix...), prefix...)
	it, err := d.r.NewIter(&pebble.IterOptions{LowerBound: full, UpperBound: prefixEnd(full)})
	if err != nil {
		return fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("%w: iter value: %v", ErrStorage, err)
		}
		if err := fn(it.Key()[len(d.prefix):], v); err != nil {
			if errors.Is(err, ErrStopScan) {
				return nil
			}
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("%w: iter: %v", ErrStorage, err)
	}
	return nil
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte{}, p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// StoredVersion returns the format version the store holds ("" when new).
func (s *Store) StoredVersion() (string, error) { return storedVersion(s.db) }

func storedVersion(r pebble.Reader) (string, error) {
	v, closer, err := r.Get([]byte(sysVersion))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: get version: %v", ErrStorage, err)
	}
	defer closer.Close()
	return string(v), nil
}

// Reset empties the store (read models, checkpoint, outbox) and records the
// format version and the live-from mark for the rebuild that follows.
func (s *Store) Reset(version string, liveFrom uint64) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange([]byte(modelPrefix), prefixEnd([]byte(modelPrefix)), nil); err != nil {
		return fmt.Errorf("%w: reset: %v", ErrStorage, err)
	}
	if err := b.DeleteRange([]byte("sys/"), prefixEnd([]byte("sys/")), nil); err != nil {
		return fmt.Errorf("%w: reset: %v", ErrStorage, err)
	}
	_ = b.Set([]byte(sysVersion), []byte(version), nil)
	_ = b.Set([]byte(sysLiveFrom), u64(liveFrom), nil)
	if err := b.Commit(s.syncOpts()); err != nil {
		return fmt.Errorf("%w: reset: %v", ErrStorage, err)
	}
	if r := s.deltas.Load(); r != nil {
		r.reset(version, liveFrom)
	}
	s.ids.Store(newIDFilter(0)) // the index is empty
	s.idMisses.Store(0)
	return nil
}

// outbox returns the pending announcements in order, with their keys.
// outbox returns the announcements a commit wrote and no publish cleared
// (a crash between the two), in key order.
func (s *Store) outbox() ([][]byte, []outboxEntry, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte(sysOutbox), UpperBound: prefixEnd([]byte(sysOutbox))})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: outbox: %v", ErrStorage, err)
	}
	defer it.Close()
	var keys [][]byte
	var es []outboxEntry
	for it.First(); it.Valid(); it.Next() {
		var e outboxEntry
		if err := jsonUnmarshal(it.Value(), &e); err != nil {
			return nil, nil, fmt.Errorf("%w: outbox entry: %v", ErrStorage, err)
		}
		keys = append(keys, append([]byte(nil), it.Key()...))
		es = append(es, e)
	}
	return keys, es, it.Error()
}

// clearOutbox removes the outbox entries at keys with point deletions, in
// one batch. Not a range deletion: every range deletion in the memtable
// makes the next read of any key re-fragment all of them, so reads after
// each announcing commit would cost more the more commits the memtable
// holds. The tombstones left only concern the outbox scan of a restart,
// until a compaction drops them.
func (s *Store) clearOutbox(keys [][]byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return fmt.Errorf("%w: clear outbox: %v", ErrStorage, err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("%w: clear outbox: %v", ErrStorage, err)
	}
	return nil
}

// Digest is a SHA-256 over every read-model key and value in key order:
// two stores that folded the same log have the same digest.
func (s *Store) Digest() (string, error) { return digest(s.db) }

// Digest is the digest of the snapshot's read models (Store.Digest).
func (s *Snapshot) Digest() (string, error) { return digest(s.snap) }

func digest(r pebble.Reader) (string, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(modelPrefix), UpperBound: prefixEnd([]byte(modelPrefix))})
	if err != nil {
		return "", fmt.Errorf("%w: digest: %v", ErrStorage, err)
	}
	defer it.Close()
	h := newDigester()
	for it.First(); it.Valid(); it.Next() {
		h.add(it.Key(), it.Value())
	}
	if err := it.Error(); err != nil {
		return "", fmt.Errorf("%w: digest: %v", ErrStorage, err)
	}
	return h.sum(), nil
}

// ModelsDigest is the Digest of a store holding the keys model(name)
// reads for each of models (and no other model's keys), read through
// those readers: a view whose models live in different stores digests as
// the one store folding them all would.
func ModelsDigest(models []Model, model func(name string) Reader) (string, error) {
	prefixes := make([]string, len(models))
	for i, m := range models {
		prefixes[i] = modelPrefix + m.Name() + "/"
	}
	slices.Sort(prefixes) // the store's key order
	h := newDigester()
	for _, p := range prefixes {
		err := model(p[len(modelPrefix):len(p)-1]).Scan(nil, func(k, v []byte) error {
			h.add(append([]byte(p), k...), v)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("digest %s: %w", p, err)
		}
	}
	return h.sum(), nil
}

// digester hashes a sequence of keys and values, each with its length.
type digester struct{ h hash.Hash }

func newDigester() digester { return digester{sha256.New()} }

func (d digester) add(k, v []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(k)))
	d.h.Write(n[:])
	d.h.Write(k)
	binary.BigEndian.PutUint64(n[:], uint64(len(v)))
	d.h.Write(n[:])
	d.h.Write(v)
}

func (d digester) sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

// MarkAnnounced records that every transition caused at or below seq was
// announced elsewhere (by the replica a snapshot came from, or another): it
// raises the live-from mark to seq and drops pending announcements caused at
// or below it, in one batch.
func (s *Store) MarkAnnounced(seq uint64) error {
	if seq == 0 {
		return nil
	}
	lf, err := s.LiveFrom()
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if seq > lf {
		_ = b.Set([]byte(sysLiveFrom), u64(seq), nil)
	}
	hi := binary.BigEndian.AppendUint64([]byte(sysOutbox), seq+1)
	if err := b.DeleteRange([]byte(sysOutbox), hi, nil); err != nil {
		return fmt.Errorf("%w: mark announced: %v", ErrStorage, err)
	}
	if err := b.Commit(s.syncOpts()); err != nil {
		return fmt.Errorf("%w: mark announced: %v", ErrStorage, err)
	}
	return nil
}

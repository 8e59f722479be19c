package projector

import "github.com/cockroachdb/pebble/v2/vfs"

// NoSyncFS is fs with every sync of a file or folder a no-op: for a store
// that lives for one question (an audit's copy, removed when it is
// answered), whose durability nothing depends on. Pebble syncs its
// manifest and folder at every flush and ingestion; an audit that ingests
// its deltas and folds would otherwise wait for a dozen fsyncs, each as
// slow as the disk is busy.
func NoSyncFS(fs vfs.FS) vfs.FS { return noSyncFS{fs} }

type noSyncFS struct{ vfs.FS }

func (fs noSyncFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.Create(name, c))
}

func (fs noSyncFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs noSyncFS) OpenDir(name string) (vfs.File, error) { return noSync(fs.FS.OpenDir(name)) }

func (fs noSyncFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs noSyncFS) Unwrap() vfs.FS { return fs.FS }

func noSync(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error                { return nil }
func (noSyncFile) SyncData() error            { return nil }
func (noSyncFile) SyncTo(int64) (bool, error) { return true, nil }

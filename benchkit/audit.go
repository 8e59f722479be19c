package benchkit

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/loredev/lore/node"
)

// AuditPoints is how many audits a bench run measures.
const AuditPoints = 60

// AuditReport is the audit part of a bench run: --as-of / --at-seq queries
// at random points of the log, answered from the node's audit checkpoints.
type AuditReport struct {
	Latency
	// Every is the checkpoint interval (events); Checkpoints how many were
	// kept at the end, and ExtraBytes the disk they hold beyond the live
	// store (tables the live store no longer has, and their own files).
	Every       int   `json:"checkpoint_every"`
	Checkpoints int   `json:"checkpoints"`
	ExtraBytes  int64 `json:"checkpoint_extra_bytes"`
	// P99ToRebuild is the p99 audit time ÷ the full rebuild's time in the
	// same run (an audit used to fold the whole log).
	P99ToRebuild float64 `json:"p99_to_rebuild"`
}

// measureAudits waits for the checkpoint of the projected log, then times
// AuditPoints audits (at a random sequence, as of a random workload time,
// or both) from query to the view's release.
func measureAudits(ctx context.Context, n *node.Node, o Options, last uint64, rebuild time.Duration, dir string) (AuditReport, error) {
	r := AuditReport{Every: node.DefaultAuditCheckpointEvery}
	for !n.AuditCheckpointsSettled() {
		// Caught up: the newest checkpoint is less than an interval behind
		// the read model and the node fills no gap any more (none is wider
		// than 9/8 of the interval, or the disk budget binds).
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.Checkpoints = len(n.AuditCheckpoints())
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xa0d1))
	span := time.Duration(o.Events) * 10 * time.Millisecond
	ds := make([]time.Duration, 0, AuditPoints)
	for i := range AuditPoints {
		var asOf *time.Time
		var atSeq uint64
		if i%3 != 1 {
			atSeq = 1 + rng.Uint64N(last)
		}
		if i%3 != 0 {
			t := Epoch.Add(time.Duration(rng.Int64N(int64(span))))
			asOf = &t
		}
		start := time.Now()
		_, release, err := n.At(ctx, asOf, atSeq)
		if err != nil {
			return r, fmt.Errorf("audit at seq %d as of %v: %w", atSeq, asOf, err)
		}
		release()
		ds = append(ds, time.Since(start))
	}
	r.Latency = Summarise(ds)
	r.P99ToRebuild = r.P99us / 1e6 / rebuild.Seconds()
	r.ExtraBytes = extraBytes(filepath.Join(dir, "node", node.AuditDir), filepath.Join(dir, "node", "pebble"))
	return r, nil
}

// extraBytes is the size of the files under dir whose inodes no file under
// base shares (hard links to base's tables cost nothing more).
func extraBytes(dir, base string) int64 {
	shared := map[node.FileID]bool{}
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				shared[node.FileIdentity(p, fi)] = true
			}
		}
		return nil
	})
	var total int64
	seen := map[node.FileID]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		id := node.FileIdentity(p, fi)
		if shared[id] || seen[id] {
			return nil
		}
		seen[id] = true
		total += fi.Size()
		return nil
	})
	return total
}

package benchkit

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/node"
)

// AuditPoints is how many audits a bench run measures.
const AuditPoints = 60

// AuditReport is the audit part of a bench run: --as-of / --at-seq queries
// at random points of the log, answered from the node's audit checkpoints.
type AuditReport struct {
	Latency
	// ByKind splits the audits by what they ask: "at_seq", "as_of" and
	// "at_seq_as_of" (both). An audit at a sequence folds only the read
	// model its query reads; one as of a time folds every model (what one
	// model refuses, given the events as of a time, leaves no trace in the
	// others).
	ByKind map[string]Latency `json:"by_kind"`
	// ByQuery splits them by the query asked (each reads one read model).
	ByQuery map[string]Latency `json:"by_query"`
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

// auditQueries are the queries the bench audits, one per read model a user
// audits most: each is called on the audit's view, as the API calls it
// with as_of / at_seq.
var auditQueries = []struct {
	group, name string
	args        func(o Options, rng *rand.Rand) (project string, args []byte)
}{
	{"learning", "weights", func(Options, *rand.Rand) (string, []byte) { return events.DefaultProject, []byte(`{}`) }},
	{"knowledge", "stats", func(o Options, rng *rand.Rand) (string, []byte) {
		return KnowledgeProject(rng.IntN(max(KnowledgeProjects(o.Knowledge), 1))), []byte(`{}`)
	}},
	{"patterns", "metrics", func(Options, *rand.Rand) (string, []byte) { return events.DefaultProject, []byte(`{"loops":0}`) }},
	{"audit", "stats", func(Options, *rand.Rand) (string, []byte) { return events.DefaultProject, []byte(`{}`) }},
}

// measureAudits waits for the checkpoint of the projected log, then times
// AuditPoints audits (at a random sequence, as of a random workload time,
// or both; each a query of auditQueries in turn) from the query's start to
// the view's release.
func measureAudits(ctx context.Context, n *node.Node, o Options, last uint64, rebuild time.Duration, dir string) (AuditReport, error) {
	r := AuditReport{Every: node.DefaultAuditCheckpointEvery, ByKind: map[string]Latency{}, ByQuery: map[string]Latency{}}
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
	byKind, byQuery := map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := range AuditPoints {
		var asOf *time.Time
		var atSeq uint64
		kind := [...]string{"at_seq", "as_of", "at_seq_as_of"}[i%3]
		if i%3 != 1 {
			atSeq = 1 + rng.Uint64N(last)
		}
		now := time.Now()
		if i%3 != 0 {
			t := Epoch.Add(time.Duration(rng.Int64N(int64(span))))
			asOf, now = &t, t
		}
		q := auditQueries[(i/3)%len(auditQueries)]
		ep, ok := app.Lookup(q.group, q.name)
		if !ok || ep.Query == nil {
			return r, fmt.Errorf("audit query %s.%s is not registered", q.group, q.name)
		}
		project, args := q.args(o, rng)
		start := time.Now()
		v, release, err := n.At(ctx, asOf, atSeq)
		if err != nil {
			return r, fmt.Errorf("audit at seq %d as of %v: %w", atSeq, asOf, err)
		}
		_, err = ep.Query(ctx, v, app.Request{Now: now, Project: project, Source: "bench", Args: args})
		release()
		if err != nil {
			return r, fmt.Errorf("audit %s.%s at seq %d as of %v: %w", q.group, q.name, atSeq, asOf, err)
		}
		d := time.Since(start)
		ds = append(ds, d)
		byKind[kind] = append(byKind[kind], d)
		byQuery[q.group+"."+q.name] = append(byQuery[q.group+"."+q.name], d)
	}
	r.Latency = Summarise(ds)
	for k, d := range byKind {
		r.ByKind[k] = Summarise(d)
	}
	for k, d := range byQuery {
		r.ByQuery[k] = Summarise(d)
	}
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

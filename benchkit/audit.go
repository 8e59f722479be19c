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
	// model its query reads; one as of a time folds it with its fold set
	// (projector.FoldSet: the models whose refusals can reach it; the
	// event log's is every model that may refuse).
	ByKind map[string]Latency `json:"by_kind"`
	// ByQuery splits them by the query asked (each reads one read model).
	ByQuery map[string]Latency `json:"by_query"`
	// Fold is the part of each audit before its query: the view opened and
	// the query's read model folded to the audit's point (its first read);
	// Query the query's own run on that view after it. LiveQuery is the
	// same queries on the live read model (no audit), for comparison.
	Fold      Latency `json:"fold"`
	Query     Latency `json:"query"`
	LiveQuery Latency `json:"live_query"`
	// AtCheckpoint is an audit exactly at a checkpoint (up to ten of
	// them): the copy opened, read and removed, nothing folded.
	AtCheckpoint Latency `json:"at_checkpoint"`
	// Every is the checkpoint interval (events); Checkpoints how many
	// points an audit starts from without folding were kept at the end
	// (checkpoints and the ends of the deltas they reach), and ExtraBytes
	// the disk they hold beyond the live store (tables the live store no
	// longer has, the checkpoints' own files, the delta tables).
	// Spacing is the live checkpoints' spacing at the end (Every, or the
	// wider gap the disk budget keeps) and Taken how many live checkpoints
	// the node took over the run.
	// MergeFilters counts the audits whose cross-loop fold was given the
	// filter of the live store's merge keys (node.Node.AuditMergeFilters).
	MergeFilters int64  `json:"merge_filters_given"`
	Every        int    `json:"checkpoint_every"`
	Spacing      uint64 `json:"checkpoint_spacing"`
	Taken        uint64 `json:"checkpoints_taken"`
	Checkpoints  int    `json:"checkpoints"`
	ExtraBytes   int64  `json:"checkpoint_extra_bytes"`
	// P99ToRebuild is the p99 audit time ÷ the full rebuild's time in the
	// same run (an audit used to fold the whole log).
	P99ToRebuild float64 `json:"p99_to_rebuild"`
}

// auditQueries are the queries the bench audits, one per read model a user
// audits most: each is called on the audit's view, as the API calls it
// with as_of / at_seq.
var auditQueries = []struct {
	group, name string
	model       string // the read model it reads
	args        func(o Options, rng *rand.Rand) (project string, args []byte)
}{
	{"learning", "weights", "learning", func(Options, *rand.Rand) (string, []byte) { return events.DefaultProject, []byte(`{}`) }},
	{"knowledge", "stats", "knowledge", func(o Options, rng *rand.Rand) (string, []byte) {
		return KnowledgeProject(rng.IntN(max(KnowledgeProjects(o.Knowledge), 1))), []byte(`{}`)
	}},
	{"patterns", "metrics", "crossloop", func(Options, *rand.Rand) (string, []byte) { return events.DefaultProject, []byte(`{"loops":0}`) }},
	{"audit", "stats", "eventlog", func(Options, *rand.Rand) (string, []byte) { return events.DefaultProject, []byte(`{}`) }},
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
	given0 := n.AuditMergeFilters()
	r.Checkpoints = len(n.AuditCheckpoints())
	r.Spacing, r.Taken = n.AuditCheckpointSpacing(), n.AuditCheckpointsTaken()
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xa0d1))
	span := time.Duration(o.Events) * 10 * time.Millisecond
	ds := make([]time.Duration, 0, AuditPoints)
	var folds, queries, live []time.Duration
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
		req := app.Request{Now: now, Project: project, Source: "bench", Args: args}
		start := time.Now()
		v, release, err := n.At(ctx, asOf, atSeq)
		if err != nil {
			return r, fmt.Errorf("audit at seq %d as of %v: %w", atSeq, asOf, err)
		}
		// The first read of the query's model folds it (node.auditView).
		if _, _, err = v.Model(q.model).Get([]byte{0}); err == nil {
			folded := time.Now()
			folds = append(folds, folded.Sub(start))
			_, err = ep.Query(ctx, v, req)
			queries = append(queries, time.Since(folded))
		}
		release()
		if err != nil {
			return r, fmt.Errorf("audit %s.%s at seq %d as of %v: %w", q.group, q.name, atSeq, asOf, err)
		}
		d := time.Since(start)
		if d > time.Second && o.Logf != nil {
			target := last
			if atSeq > 0 {
				target = atSeq
			}
			cp := n.AuditCheckpointFor(asOf, target)
			span, err := auditSpan(n, cp, target, asOf)
			if err != nil {
				span = "the ranges the time index leaves unread: " + err.Error()
			}
			o.Logf("audit %d (%s, %s.%s) took %.2f s: at seq %d as of %v, from the checkpoint at %d (%d sequences after it, %s); fold %.2f s",
				i, kind, q.group, q.name, d.Seconds(), target, asOf, cp, target-cp, span, folds[len(folds)-1].Seconds())
		}
		t0 := time.Now()
		if _, err := ep.Query(ctx, n.Live(), req); err != nil {
			return r, fmt.Errorf("%s.%s on the live read model: %w", q.group, q.name, err)
		}
		live = append(live, time.Since(t0))
		ds = append(ds, d)
		byKind[kind] = append(byKind[kind], d)
		byQuery[q.group+"."+q.name] = append(byQuery[q.group+"."+q.name], d)
	}
	// The fixed part: audits exactly at a checkpoint (a copy opened and
	// closed; nothing to fold).
	var opens []time.Duration
	cps := n.AuditCheckpoints()
	for i := 0; i < len(cps); i += max(len(cps)/10, 1) {
		start := time.Now()
		v, release, err := n.At(ctx, nil, cps[i].Seq)
		if err != nil {
			return r, fmt.Errorf("audit at checkpoint %d: %w", cps[i].Seq, err)
		}
		_, _, err = v.Model(auditQueries[0].model).Get([]byte{0})
		release()
		if err != nil {
			return r, fmt.Errorf("audit at checkpoint %d: %w", cps[i].Seq, err)
		}
		opens = append(opens, time.Since(start))
	}
	r.AtCheckpoint = Summarise(opens)
	r.Latency = Summarise(ds)
	r.Fold, r.Query, r.LiveQuery = Summarise(folds), Summarise(queries), Summarise(live)
	for k, d := range byKind {
		r.ByKind[k] = Summarise(d)
	}
	for k, d := range byQuery {
		r.ByQuery[k] = Summarise(d)
	}
	r.P99ToRebuild = r.P99us / 1e6 / rebuild.Seconds()
	r.ExtraBytes = extraBytes(filepath.Join(dir, "node", node.AuditDir), filepath.Join(dir, "node", "pebble"))
	r.MergeFilters = n.AuditMergeFilters() - given0
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

// auditSpan says how many ranges of the log an audit from the point at cp
// reads to target as of asOf, and how many sequences they hold.
func auditSpan(n *node.Node, cp, target uint64, asOf *time.Time) (string, error) {
	rs, err := n.Store.AuditRanges(cp, target, asOf)
	if err != nil {
		return "", fmt.Errorf("audit ranges: %w", err)
	}
	var seqs uint64
	for _, r := range rs {
		seqs += r.To - r.From + 1
	}
	return fmt.Sprintf("%d of them in the %d ranges the time index leaves", seqs, len(rs)), nil
}

package node

import (
	"time"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector"
)

// ViewDigest is the digest of an audit view's store (or snapshot).
func ViewDigest(v app.View) (string, error) {
	switch v := v.(type) {
	case snapshotView:
		return v.snap.Digest()
	case *auditView:
		return projector.ModelsDigest(v.n.models, v.Model)
	}
	return v.(storeView).st.Digest()
}

// AnsweredLive reports whether an audit at target as of asOf is answered
// from a snapshot of the live read model.
func (n *Node) AnsweredLive(asOf *time.Time, target uint64) bool {
	_, release, ok := n.liveAudit(asOf, target)
	if ok {
		release()
	}
	return ok
}

// AuditFoldedTogether reports whether an audit view folded every model
// together (its models were not folded alone), once read.
func AuditFoldedTogether(v app.View) bool {
	a, ok := v.(*auditView)
	return ok && a.all != nil
}

// LiveSpacing is liveSpacing, the live poll's spacing rule.
var LiveSpacing = liveSpacing

// AuditDeltasFor is how many deltas an audit at target as of asOf applies
// to the checkpoint it copies.
func (n *Node) AuditDeltasFor(asOf *time.Time, target uint64) int {
	n.audits.mu.Lock()
	defer n.audits.mu.Unlock()
	return len(n.audits.start(n.audits.format, target, asOf).deltas)
}

// AuditBaseEvery is auditBaseEvery: how many intervals apart the live poll
// checkpoints the live store while deltas are recorded.
const AuditBaseEvery = auditBaseEvery

// ThinOut is thinOut over checkpoints at seqs: the index it drops.
func ThinOut(seqs ...uint64) int {
	l := make([]auditCheckpoint, len(seqs))
	for i, s := range seqs {
		l[i].mark.Seq = s
	}
	return thinOut(l)
}

package node

import (
	"time"

	"github.com/loredev/lore/app"
)

// ViewDigest is the digest of an audit view's store (or snapshot).
func ViewDigest(v app.View) (string, error) {
	if s, ok := v.(snapshotView); ok {
		return s.snap.Digest()
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

// AuditStart is the sequence of the checkpoint an audit at target as of
// asOf starts from (0: the start of the log).
func (n *Node) AuditStart(asOf *time.Time, target uint64) (uint64, error) {
	st, release, err := n.openAudit(asOf, target)
	if err != nil {
		return 0, err
	}
	defer release()
	return st.Checkpoint()
}

package node

import (
	"time"

	"github.com/loredev/lore/app"
)

// ViewDigest is the digest of an audit view's store.
func ViewDigest(v app.View) (string, error) { return v.(storeView).st.Digest() }

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

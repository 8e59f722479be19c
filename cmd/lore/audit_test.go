package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loredev/lore/node"
	"github.com/loredev/lore/test/natstest"
)

// TestServeAuditsFromCheckpoints: `lore serve --audit-checkpoint-every 2`
// keeps local checkpoints, and `--at-seq` audits through the CLI answer
// the state at each point of the log, whichever checkpoint they start from.
func TestServeAuditsFromCheckpoints(t *testing.T) {
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		code, _, errs := cli(t, ctx, "", "serve", "--data", data, "--port", "-1", "--tick", "0",
			"--audit-checkpoint-every", "2", "--audit-checkpoint-keep", "2")
		if code != 0 {
			t.Errorf("serve exited %d: %s", code, errs)
		}
		served <- code
	}()
	defer func() {
		stop()
		<-served
	}()
	natstest.WaitFor(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(data, urlFile))
		return err
	})
	bg := context.Background()
	d := []string{"--data", data}
	const events = 7
	for i := range events {
		code, _, errs := cli(t, bg, "", append(d, "record", "error.recorded", "--set", fmt.Sprintf("bead_id=bd-%d", i),
			"--set", "error_type=timeout", "--set", "message=tests hung")...)
		if code != 0 {
			t.Fatalf("record %d: exit %d: %s", i, code, errs)
		}
	}
	// The newest point an audit starts from (a checkpoint or a delta's
	// end) is within an interval of the log's end.
	natstest.WaitFor(t, 2*time.Minute, func() error {
		es, err := os.ReadDir(filepath.Join(data, node.AuditDir))
		if err != nil {
			return err
		}
		var cps, points []string
		for _, e := range es {
			name := e.Name()
			switch {
			case e.IsDir() && strings.HasPrefix(name, "cp-"):
				cps = append(cps, name)
				points = append(points, strings.TrimPrefix(name, "cp-"))
			case strings.HasPrefix(name, "dl-") && strings.HasSuffix(name, ".json"):
				points = append(points, strings.TrimSuffix(strings.TrimPrefix(name, "dl-"), ".json"))
			}
		}
		slices.Sort(points)
		if len(points) == 0 || points[len(points)-1] < fmt.Sprintf("%020d", events-1) {
			return fmt.Errorf("checkpoints %v, points %v", cps, points)
		}
		if len(cps) > 2 {
			return errors.New("more checkpoints than --audit-checkpoint-keep")
		}
		return nil
	})
	for seq := 1; seq <= events; seq++ {
		code, out, errs := cli(t, bg, "", append(d, "stats", "--json", "--at-seq", fmt.Sprint(seq))...)
		var stats struct {
			Total uint64 `json:"total"`
			Seq   uint64 `json:"seq"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &stats) != nil {
			t.Fatalf("stats --at-seq %d: exit %d, out %q, err %q", seq, code, out, errs)
		}
		if stats.Total != uint64(seq) || stats.Seq != uint64(seq) {
			t.Fatalf("stats --at-seq %d: total %d at seq %d, want %d at %d", seq, stats.Total, stats.Seq, seq, seq)
		}
	}
	for _, bad := range [][]string{{"--audit-checkpoint-every", "-5"}, {"--audit-checkpoint-disk", "-1"}, {"--audit-checkpoint-keep", "-1"}} {
		if code, _, _ := cli(t, bg, "", append(append(d, "serve"), bad...)...); code != exitBadInput {
			t.Fatalf("serve %v: exit %d, want %d", bad, code, exitBadInput)
		}
	}
}

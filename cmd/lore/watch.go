package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/consumers"
	"github.com/loredev/lore/events"
)

func init() { addCommand(newCmdWatch) }

type watchOptions struct {
	types, name string
	all         bool
	count       int
}

func newCmdWatch(f *Factory) *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch [--type promoted,inverted,deprecated,archived] [--project P] [--name N]",
		Short: "Print announcements (promotions, inversions, deprecations, archives) as they happen",
		Long: `Print lore's announcements live: the derived events of the LORE_DERIVED stream.

--type takes class words (promoted, inverted, deprecated, archived, rejected,
extracted, ...), type names (pattern.inverted) or versioned types. Without
--name the watch sees announcements made from now on; with --name it is a
durable consumer "lore-watch-<name>" that resumes after the last announcement
it printed, across restarts (--all: from the first announcement on its first
run). With --json, one object per line.`,
		Example: `  lore watch
  lore watch --type inverted,deprecated --project web
  lore watch --name ci --json | jq .type`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWatch(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.types, "type", "", "announcements to show, comma-separated (default: all)")
	fl.StringVar(&o.name, "name", "", "durable name: resume where this watch stopped")
	fl.BoolVar(&o.all, "all", false, "on the first run of a named watch (or an unnamed one), start from the first announcement")
	fl.IntVar(&o.count, "count", 0, "exit after this many announcements (0: run until interrupted)")
	declare(fl, rules{"type": domain("announcement-types"), "name": domain("consumer-name"), "count": atLeast(0)})
	return cmd
}

// watchLine is one line of `lore watch --json`. NB: field names are stable.
type watchLine struct {
	Seq      uint64          `json:"seq"`
	CauseSeq uint64          `json:"cause_seq"`
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Source   string          `json:"source"`
	Subject  string          `json:"subject"`
	Time     time.Time       `json:"time"`
	Project  string          `json:"project"`
	Data     json.RawMessage `json:"data"`
}

func runWatch(ctx context.Context, f *Factory, o watchOptions) error {
	filter := consumers.Filter{Types: consumers.ParseTypes(o.types), Project: f.Project}
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	js, err := events.NewJetStream(nc)
	if err != nil {
		return err
	}
	w, err := consumers.NewWatch(ctx, js, consumers.Options{Filter: filter, Name: o.name, All: o.all})
	if err != nil {
		if errors.Is(err, consumers.ErrInvalidOption) {
			return fmt.Errorf("%w: %v", errBadInput, err)
		}
		return err
	}
	defer w.Stop()
	enc := json.NewEncoder(f.Out)
	for n := 0; o.count == 0 || n < o.count; n++ {
		d, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		ev := d.Event
		if f.JSON {
			err = enc.Encode(watchLine{Seq: d.Seq, CauseSeq: d.CauseSeq, ID: ev.ID, Type: ev.Type, Source: ev.Source,
				Subject: ev.Subject, Time: ev.Time, Project: ev.Project, Data: json.RawMessage(ev.Data)})
		} else {
			_, err = fmt.Fprintf(f.Out, "%s\t%s\t%s\t%s\t%s\n", ev.Time.UTC().Format(time.RFC3339), ev.Type, ev.Project, ev.Subject, compactJSON(ev.Data))
		}
		if err != nil {
			_ = d.Nak() // not shown: the next watch gets it at once
			return err
		}
		// Shown: acknowledged even when ctx ends meanwhile.
		if err := d.Ack(context.WithoutCancel(ctx)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	return nil
}

func compactJSON(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

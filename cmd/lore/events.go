package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/eventlog"
)

func init() {
	addCommand(newCmdEvents)
	addCommand(newCmdStats)
}

func newCmdEvents(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "events", Short: "Read the event log: tail it, list the catalogue"}
	cmd.AddCommand(newCmdEventsTail(f), newCmdEventsTypes(f))
	return cmd
}

type tailOptions struct {
	fromSeq uint64
	last    int
	types   []string
	follow  bool
}

func newCmdEventsTail(f *Factory) *cobra.Command {
	var o tailOptions
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print events of the log (the last 20 by default; --follow for live)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEventsTail(cmd.Context(), f, o)
		},
	}
	cmd.Flags().Uint64Var(&o.fromSeq, "from-seq", 0, "start at this stream sequence")
	cmd.Flags().IntVarP(&o.last, "last", "n", 20, "print the last N events that pass the filters (--type, --project), with no --from-seq")
	cmd.Flags().StringSliceVar(&o.types, "type", nil, "only these types (e.g. outcome.recorded); -n counts only these")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing new events")
	declare(cmd.Flags(), rules{"from-seq": atLeast(0), "last": atLeast(0), "type": domain("event-type")})
	return cmd
}

func runEventsTail(ctx context.Context, f *Factory, o tailOptions) error {
	var types []string
	for _, t := range o.types {
		r, ok := events.ResolveType(t)
		if !ok {
			return fmt.Errorf("%w: --type: unknown type %q", errBadInput, t)
		}
		types = append(types, r)
	}
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	js, err := events.NewJetStream(nc)
	if err != nil {
		return err
	}
	st, err := js.Stream(ctx, events.LogStream)
	if err != nil {
		return fmt.Errorf("log stream (is lore serving on this NATS?): %w", err)
	}
	// The filters apply before -n: the last N events of the wanted types.
	q := eventlog.TailQuery{Last: o.last, FromSeq: o.fromSeq, Types: types, Project: f.Project}
	got, end, err := eventlog.Tail(ctx, st, q)
	if err != nil {
		return err
	}
	for _, e := range got {
		printEntry(f, e)
	}
	if !o.follow {
		return nil
	}
	return followLog(ctx, f, st, end+1, q)
}

// followLog prints the events of q appended from seq start on, until ctx
// ends.
func followLog(ctx context.Context, f *Factory, st jetstream.Stream, start uint64, q eventlog.TailQuery) error {
	filter := []string{events.EventsFilter}
	if q.Project != "" {
		filter = []string{events.EventsPrefix + "." + events.EncodeToken(q.Project) + ".>"}
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: filter,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	go func() { <-ctx.Done(); it.Stop() }()
	want := map[string]bool{}
	for _, t := range q.Types {
		want[t] = true
	}
	for {
		msg, err := it.Next(jetstream.NextMaxWait(time.Second))
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) {
				continue
			}
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return err
		}
		meta, _ := msg.Metadata()
		ev, derr := events.Decode(msg.Data())
		if derr != nil || len(want) == 0 || want[ev.Type] {
			printEntry(f, eventlog.Entry{Seq: meta.Sequence.Stream, Event: ev, Err: derr})
		}
	}
}

// printEntry prints one event of the log, or says on stderr that it does
// not decode.
func printEntry(f *Factory, e eventlog.Entry) {
	if e.Err != nil {
		fmt.Fprintf(f.Err, "seq %d: undecodable: %v\n", e.Seq, e.Err)
		return
	}
	printEvent(f, e.Seq, e.Event)
}

func printEvent(f *Factory, seq uint64, ev *events.Event) {
	if f.JSON {
		line, _ := json.Marshal(struct {
			Seq uint64 `json:"seq"`
			*events.Event
		}{seq, ev})
		fmt.Fprintln(f.Out, string(line))
		return
	}
	fmt.Fprintf(f.Out, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", seq, ev.Time.UTC().Format(time.RFC3339),
		ev.Type, ev.Project, ev.Subject, ev.Source, compact(ev.Data, 100))
}

func compact(raw json.RawMessage, max int) string {
	s := strings.ReplaceAll(string(raw), "\n", " ")
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func newCmdEventsTypes(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "types",
		Short: "List the event catalogue (types, aggregates, meaning)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out []app.TypeInfo
			for _, k := range events.Kinds() {
				out = append(out, app.TypeInfo{Type: k.Type, Aggregate: k.Aggregate, Derived: k.Derived, Doc: k.Doc})
			}
			if f.JSON {
				return f.PrintJSON(out)
			}
			// Columns aligned by tabwriter whatever a type's or aggregate's length.
			tw := tabwriter.NewWriter(f.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TYPE\tAGGREGATE\tMEANING")
			for _, t := range out {
				d := ""
				if t.Derived {
					d = " (announced by lore)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s%s\n", t.Type, t.Aggregate, t.Doc, d)
			}
			return tw.Flush()
		},
	}
}

func newCmdStats(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Events folded into the read models, by type and project",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out statsOut
			if err := f.Call(cmd.Context(), "audit", "stats", nil, &out); err != nil {
				return err
			}
			live := f.AsOf == "" && f.AtSeq == 0
			if live {
				if err := f.readiness(cmd.Context(), &out); err != nil {
					return err
				}
			}
			if f.JSON {
				return f.PrintJSON(out)
			}
			fmt.Fprintf(f.Out, "read model at seq %d", out.Seq)
			if live {
				fmt.Fprintf(f.Out, ", log at seq %d: %s", out.LogSeq, out.Status)
			}
			fmt.Fprintf(f.Out, "\n%s", eventlog.Format(out.Stats))
			return nil
		},
	}
}

// isTerminal reports whether w is a terminal (progress and colour only there).
func isTerminal(w any) bool {
	file, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := file.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// statsOut is lore stats' answer: the folded events and, for the live read
// model, how it stands against the log.
type statsOut struct {
	eventlog.Stats
	Seq uint64 `json:"seq"`
	// LogSeq, Ready and Status: live only (no --as-of, --at-seq).
	LogSeq uint64 `json:"log_seq,omitempty"`
	Ready  *bool  `json:"ready,omitempty"`
	Status string `json:"status,omitempty"`
}

// readinessWait is how long lore stats watches a read model behind the log
// for progress before it says the projector stalled; a projector catching
// up commits every 100 ms at most.
const readinessWait = 2 * time.Second

// readiness compares the read model with the log. A read model behind the
// log whose sequence does not move within readinessWait is not ready.
func (f *Factory) readiness(ctx context.Context, out *statsOut) error {
	js, err := f.jetStream()
	if err != nil {
		return err
	}
	logSeq := func() (uint64, error) {
		st, err := js.Stream(ctx, events.LogStream)
		if err != nil {
			return 0, fmt.Errorf("log stream: %w", err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("log stream info: %w", err)
		}
		return info.State.LastSeq, nil
	}
	last, err := logSeq()
	if err != nil {
		return err
	}
	ready := true
	out.LogSeq, out.Ready, out.Status = last, &ready, "caught up"
	if out.Seq >= last {
		return nil
	}
	first := out.Seq
	deadline := time.Now().Add(readinessWait)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		var again statsOut
		if err := f.Call(ctx, "audit", "stats", nil, &again); err != nil {
			return err
		}
		if again.Seq != first {
			out.Status = fmt.Sprintf("catching up (%d events behind)", last-again.Seq)
			return nil
		}
	}
	ready = false
	out.Status = fmt.Sprintf("NOT READY: %d events behind the log and no progress in %s", last-first, readinessWait)
	return nil
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/events"
)

type recordOptions struct {
	set                []string
	id, subject, atime string
	expect             int64
	noWait             bool
}

func init() { addCommand(newCmdRecord) }

func newCmdRecord(f *Factory) *cobra.Command {
	var o recordOptions
	cmd := &cobra.Command{
		Use:   "record TYPE [--set field=value ...]",
		Short: "Append one event to the log",
		Long: `Append one event of TYPE (e.g. outcome.recorded or outcome.recorded/v1).

The data comes from --set field=value flags (values are parsed as JSON when they
can be: numbers, true/false, ["a","b"]; otherwise taken as strings), or, without
--set, from a JSON object on stdin: either the data object itself or a whole
event envelope {"id","type","source","subject","time","project","data"}.
The event is validated against its schema before it reaches the log; an invalid
one is refused with an error naming the field (exit code 2).

  lore record outcome.recorded --set bead_id=bd-1.2 --set duration_ms=120000 \
      --set retry_count=0 --set success=true --set 'criteria=["type_safe"]'
  echo '{"bead_id":"bd-1","error_type":"timeout","message":"slow"}' | lore record error.recorded`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRecord(cmd, f, args[0], o)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.set, "set", nil, "data field=value (repeatable)")
	fl.StringVar(&o.id, "id", "", "event id (default: a new ULID); re-sending an id changes nothing")
	fl.StringVar(&o.subject, "subject", "", "aggregate id (default: from the data)")
	fl.StringVar(&o.atime, "time", "", "when it happened, RFC 3339 (default: now); backfilling is allowed")
	fl.Int64Var(&o.expect, "expect-seq", -1, "append only if the aggregate's last event is at this stream sequence (0: none yet)")
	fl.BoolVar(&o.noWait, "no-wait", false, "return once stored, without waiting for the projection")
	declare(fl, rules{"time": timestamp, "expect-seq": atLeast(-1)})
	declare(fl, rules{"id": schemaField("envelope.v1.json", "id", "two words"), "subject": schemaField("envelope.v1.json", "subject", strings.Repeat("s", 257))})
	freeText(fl, "set")
	return cmd
}

func runRecord(cmd *cobra.Command, f *Factory, typ string, o recordOptions) error {
	resolved, ok := events.ResolveType(typ)
	if !ok {
		return fmt.Errorf("%w: unknown event type %q (see `lore events types`)", errBadInput, typ)
	}
	ev := &events.Event{Type: resolved, ID: o.id, Subject: o.subject, Project: f.Project, Source: f.Source}
	if o.atime != "" {
		t, err := parseTime(o.atime)
		if err != nil {
			return fmt.Errorf("%w: --time: %v", errBadInput, err)
		}
		ev.Time = t
	}
	if len(o.set) > 0 {
		data := map[string]any{}
		for _, kv := range o.set {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("%w: --set %q: want field=value", errBadInput, kv)
			}
			var parsed any
			if err := json.Unmarshal([]byte(v), &parsed); err != nil {
				parsed = v
			}
			data[k] = parsed
		}
		raw, _ := json.Marshal(data)
		ev.Data = raw
	} else {
		raw, err := io.ReadAll(io.LimitReader(f.In, 16<<20))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(strings.TrimSpace(string(raw))) == 0 {
			return fmt.Errorf("%w: no data: give --set field=value or a JSON object on stdin", errBadInput)
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			return fmt.Errorf("%w: stdin is not a JSON object: %v", errBadInput, err)
		}
		if _, isEnvelope := probe["data"]; isEnvelope {
			var env events.Event
			if err := json.Unmarshal(raw, &env); err != nil {
				return fmt.Errorf("%w: envelope: %v", errBadInput, err)
			}
			if env.Type != "" && env.Type != resolved {
				if r2, ok := events.ResolveType(env.Type); !ok || r2 != resolved {
					return fmt.Errorf("%w: envelope type %q differs from %q", errBadInput, env.Type, resolved)
				}
			}
			env.Type = resolved
			if env.Project == "" {
				env.Project = ev.Project
			}
			if env.Source == "" {
				env.Source = ev.Source
			}
			if env.ID == "" {
				env.ID = ev.ID
			}
			if env.Time.IsZero() {
				env.Time = ev.Time
			}
			ev = &env
		} else {
			ev.Data = raw
		}
	}
	req, err := f.Request(ev)
	if err != nil {
		return err
	}
	if o.expect >= 0 {
		e := uint64(o.expect)
		req.ExpectLastSeq = &e
	}
	req.NoWait = o.noWait
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	var reply api.CommandReply
	ctx := cmd.Context()
	if err := api.NewClient(nc).Call(ctx, "record", "event", req, &reply); err != nil {
		return err
	}
	if f.JSON {
		return f.PrintJSON(reply)
	}
	for _, r := range reply.Appended {
		dup := ""
		if r.Duplicate {
			dup = " (duplicate: already stored)"
		}
		fmt.Fprintf(f.Out, "recorded %s seq %d on %s%s\n", r.ID, r.Seq, r.Subject, dup)
	}
	return nil
}

package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector"
	"github.com/loredev/lore/schemas"
)

func init() { addCommand(newCmdSchemas) }

func newCmdSchemas(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "schemas", Short: "The JSON Schemas of lore's events, for clients in any language"}
	cmd.AddCommand(&cobra.Command{
		Use:   "export DIR",
		Short: "Write every event schema and subjects.md (how to append with any NATS client) to DIR",
		Example: `  lore schemas export ./lore-schemas
  ls ./lore-schemas   # envelope.v1.json outcome.recorded.v1.json ... subjects.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			n, err := exportSchemas(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "wrote %d schema files and subjects.md to %s\n", n, args[0])
			return nil
		},
	})
	return cmd
}

// exportSchemas writes the embedded schema files and subjects.md into dir.
func exportSchemas(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("%w: %v", errBadInput, err)
	}
	names, err := fs.Glob(schemas.FS, "*.json")
	if err != nil {
		return 0, err
	}
	for _, name := range names {
		b, err := schemas.FS.ReadFile(name)
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return 0, fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "subjects.md"), []byte(subjectsDoc()), 0o644); err != nil {
		return 0, fmt.Errorf("write subjects.md: %w", err)
	}
	return len(names), nil
}

// subjectsDoc describes lore's subjects, headers and event types so any
// NATS client can append events and follow announcements.
func subjectsDoc() string {
	var b strings.Builder
	b.WriteString(`# lore subjects

Events are JSON envelopes (envelope.v1.json) whose "data" is validated by the
schema of their type (<type name>.v<N>.json).

## Appending an event (any NATS client with JetStream)

Publish the envelope with a JetStream publish (wait for the ack) to

    lore.ev.<project>.<aggregate>.<aggregate id>

- <project>: the envelope's "project" ("default" when empty), encoded as below.
- <aggregate>: the aggregate token of the type (table below).
- <aggregate id>: the envelope's "subject" (the aggregate id; the data field
  named in the table), encoded as below.
- header Nats-Msg-Id: the envelope's "id" (ULID recommended), reused on every
  retry: the stream deduplicates (2 minute window), so a retry never appends
  twice.
- optional header Nats-Expected-Last-Subject-Sequence: optimistic concurrency
  on the aggregate.

Token encoding: letters, digits, '-' and '_' stay; every other byte becomes
%XX (upper-case hex); the empty string is "%". Example: bead "bd-12.1" in
project "web" → lore.ev.web.bead.bd-12%2E1.

The stream accepts what a client publishes; lore validates it when folding.
An event that fails validation is moved to the dead-letter stream LORE_DLQ
(subject lore.dlq.<seq>, headers Lore-Reason and Lore-Subject) and the
projector moves on. To be told at once, call lore.api.record.event instead
(request–reply): it validates before appending and answers with the error.

## Announcements (derived events)

lore publishes announcements to the stream LORE_DERIVED on

    lore.derived.<project>.<type name>.<aggregate id>

(the type name keeps its dots, e.g. lore.derived.default.pattern.inverted.p1),
with headers Nats-Msg-Id (deterministic per cause), Lore-Type and
Lore-Cause-Seq (the log sequence of the event that caused it). Subscribe with
a JetStream consumer on lore.derived.> (or lore.derived.<project>.>). Clients
never publish there.

## API

Every query and command is a NATS request–reply endpoint of the micro
service "lore": lore.api.<group>.<name>; discover them with a request to
$SRV.INFO.lore. Request: {"args": {...}, "project": "...", "source": "...",
"now": RFC3339, "as_of": RFC3339, "at_seq": N}. Errors carry the headers
Nats-Service-Error-Code (400, 404, 409, 500) and Nats-Service-Error.

## Event types

| type | aggregate | aggregate id field | derived | schema |
|------|-----------|--------------------|---------|--------|
`)
	for _, k := range events.Kinds() {
		derived := ""
		if k.Derived {
			derived = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", k.Type, k.Aggregate, aggregateField(k), derived, schemas.FileName(k.Type))
	}
	fmt.Fprintf(&b, "\nHeaders set by lore's own appender: %s (the type) and %s. Announcement header: %s.\n",
		events.TypeHeader, events.CheckedHeader, projector.HeaderCauseSeq)
	return b.String()
}

// aggregateField finds which top-level string field of a kind's payload is
// its aggregate id, by setting each to its own name and asking AggregateID.
func aggregateField(k events.Kind) string {
	p := k.New()
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return "see schema"
	}
	zero := p.AggregateID()
	s := v.Elem()
	for i := 0; i < s.NumField(); i++ {
		fld := s.Type().Field(i)
		if fld.Type.Kind() != reflect.String || !fld.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(fld.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		s.Field(i).SetString("\x00" + name)
	}
	id := p.AggregateID()
	switch {
	case strings.HasPrefix(id, "\x00") && zero != "":
		return "`" + id[1:] + "` (computed when empty)"
	case strings.HasPrefix(id, "\x00"):
		return "`" + id[1:] + "`"
	case zero != "" && zero == id:
		return "always `" + zero + "`"
	}
	return "see schema"
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
)

func newCmdLearningExport(f *Factory) *cobra.Command {
	var format, kind string
	var part int
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the learning state as JSONL in swarm-tools' record shapes",
		Long: "One record per line: FeedbackEvent (feedback), DecompositionPattern (decompositions: patterns\n" +
			"and their anti-patterns), PatternMaturity (maturity) and ErrorEntry (errors), with swarm-tools'\n" +
			"field names. Without --kind every kind is written, in that order. Neutral feedback is kept by\n" +
			"lore as a count only (it weighs in neither sum), so feedback lines are helpful or harmful.\n" +
			"A state too large for one reply is read in parts of --part records (2 000 when not given),\n" +
			"written as they come: the same lines.",
		Example: "  lore learning export --format swarm-tools --kind maturity > maturity.jsonl\n  lore learning export --project web",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			enc := json.NewEncoder(f.Out)
			page := func(offset, limit int) any {
				return app.LearningExportArgs{Format: format, Kind: kind, Offset: offset, Limit: limit}
			}
			count := func(r *app.LearningExport) int { return len(r.Records()) }
			return callParts(cmd.Context(), f, "learning", "export", part, page, count, func(r *app.LearningExport) error {
				for _, rec := range r.Records() {
					if err := enc.Encode(rec); err != nil {
						return fmt.Errorf("write export: %w", err)
					}
				}
				return nil
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", app.ExportFormatSwarmTools, "record shapes: swarm-tools")
	fl.StringVar(&kind, "kind", "", "feedback, decompositions, maturity or errors (default: all)")
	fl.IntVar(&part, "part", 0, "read the export in parts of this many records (default: in one reply, in parts of 2000 when it is too large for one)")
	declare(fl, rules{"format": oneOf(app.ExportFormatSwarmTools), "kind": oneOf(app.ExportKinds...), "part": atLeast(0)})
	return cmd
}

// callParts reads an export query and hands each answer to write: in one
// reply when part is 0 and it fits, else in parts of part records
// (exportPart when 0), halved while a part is still too large for a
// reply, until a part holds fewer records than asked (count says how many
// an answer holds); page returns the query's arguments for the part at
// offset of limit records (0, 0: whole).
func callParts[R any](ctx context.Context, f *Factory, group, name string, part int, page func(offset, limit int) any,
	count func(*R) int, write func(*R) error) error {
	if part == 0 {
		var r R
		err := f.Call(ctx, group, name, page(0, 0), &r)
		if !errors.Is(err, app.ErrTooLarge) {
			if err != nil {
				return err
			}
			return write(&r)
		}
		part = exportPart
	}
	for offset := 0; ; {
		var r R
		err := f.Call(ctx, group, name, page(offset, part), &r)
		if errors.Is(err, app.ErrTooLarge) && part > 1 {
			part /= 2
			continue
		}
		if err != nil {
			return err
		}
		if err := write(&r); err != nil {
			return err
		}
		n := count(&r)
		if n < part {
			return nil
		}
		offset += n
	}
}

// callList reads a listing query whole: with args, in one reply when the
// user asked for a page (--limit or --offset on cmd) or the listing fits,
// else in pages of exportPart items (halved while a page is still too
// large for a reply), joined; page returns args for the page at offset of
// limit items. The pages are read one after another: a listing that
// changes meanwhile is read as it was at each page.
func callList[T any](cmd *cobra.Command, f *Factory, group, name string, args any, page func(offset, limit int) any) ([]T, error) {
	var all []T
	err := f.Call(cmd.Context(), group, name, args, &all)
	if cmd.Flags().Changed("limit") || cmd.Flags().Changed("offset") || !errors.Is(err, app.ErrTooLarge) {
		return all, err
	}
	all = nil
	for size := exportPart; ; {
		var part []T
		err := f.Call(cmd.Context(), group, name, page(len(all), size), &part)
		if errors.Is(err, app.ErrTooLarge) && size > 1 {
			size /= 2
			continue
		}
		if err != nil {
			return nil, err
		}
		all = append(all, part...)
		if len(part) < size {
			return all, nil
		}
	}
}

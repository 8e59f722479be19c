package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

// Knowledge files in and out: import (opencode-swarm JSONL), migrate
// (legacy context.md), export.

// projectFor picks the project of a migration: --project, else the name in
// package.json, else the directory's base name.
func projectFor(f *Factory, dir string) string {
	if f.Project != "" {
		return f.Project
	}
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		var p struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(b, &p) == nil && p.Name != "" && !strings.ContainsAny(p.Name, " \t") {
			return p.Name
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return filepath.Base(abs)
	}
	return events.DefaultProject
}

// sendImport sends parsed submissions (api.ImportKnowledge: up to
// api.ImportWindow requests appended ahead of the fold, then one wait)
// and reports what the fold made of each: lines[i] is the source
// line of subs[i] (nil: none).
func sendImport(cmd *cobra.Command, f *Factory, format, project string, subs []events.KnowledgeSubmitted, lines []int, bad []knowledge.LineError) error {
	nc, err := f.Conn()
	if err != nil {
		return err
	}
	// A long import reports its progress on stderr, at most once a second:
	// lessons sent and folded of the total, and the rate so far.
	start := time.Now()
	lastProgress := start
	progress := func(sent, folded, n int) {
		if now := time.Now(); now.Sub(lastProgress) >= time.Second {
			lastProgress = now
			fmt.Fprintf(f.Err, "%s: %d of %d sent, %d folded, %.0f lessons/s\n", format, sent, n, folded, float64(folded)/now.Sub(start).Seconds())
		}
	}
	// Each import call carries the idempotency key f.Call would give it.
	request := func(args any) (api.Request, error) {
		req, err := f.Request(args)
		if err != nil {
			return req, err
		}
		if f.ID != "" {
			f.commandCalls++
			req.IdempotencyKey = f.ID
			if f.commandCalls > 1 {
				req.IdempotencyKey = fmt.Sprintf("%s/%d", f.ID, f.commandCalls)
			}
		}
		return req, nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), max(f.Timeout, time.Duration(len(subs)/app.KnowledgeImportChunk+1)*f.Timeout))
	defer cancel()
	total, err := api.ImportKnowledge(ctx, api.NewClient(nc),
		app.KnowledgeImportArgs{Format: format, Project: project, Submissions: subs},
		api.ImportOptions{Request: request, Progress: progress, Window: api.ImportWindow})
	if err != nil {
		return err
	}
	where := func(it app.KnowledgeImportItem) string {
		if it.Index < len(lines) && lines[it.Index] > 0 {
			return fmt.Sprintf("line %d", lines[it.Index])
		}
		return fmt.Sprintf("item %d", it.Index+1)
	}
	if f.JSON {
		return f.PrintJSON(struct {
			Format   string                `json:"format"`
			Project  string                `json:"project"`
			Read     int                   `json:"read"`
			BadLines []knowledge.LineError `json:"bad_lines"`
			Lines    []int                 `json:"lines,omitempty"`
			app.KnowledgeImportResult
		}{format, project, len(subs), append([]knowledge.LineError{}, bad...), lines, total})
	}
	for _, b := range bad {
		fmt.Fprintf(f.Err, "line %d skipped: %s\n", b.Line, b.Err)
	}
	fmt.Fprintf(f.Out, "%s: read %d, sent %d, already imported %d, bad lines %d\n", format, len(subs), total.Sent, total.Existing, len(bad))
	fmt.Fprintf(f.Out, "  added %d, rejected %d, merged %d, reinforced %d, pending %d; promoted to the hive %d, archived by cap %d\n",
		total.Added, total.Rejected, total.Merged, total.Reinforced, total.Pending, len(total.Promoted), len(total.Archived))
	for _, it := range total.Items {
		switch it.Outcome {
		case knowledge.OutcomeRejected:
			fmt.Fprintf(f.Out, "  rejected\t%s\t%s\tlayer %d: %s\n", where(it), shortID(it.ID), it.Layer, it.Reason)
		case app.OutcomeMerged, knowledge.OutcomeReinforced:
			fmt.Fprintf(f.Out, "  %s\t%s\t%s into %s\n", it.Outcome, where(it), it.ID, it.MergedInto)
		case app.OutcomePending:
			fmt.Fprintf(f.Out, "  pending\t%s\t%s (event %s)\n", where(it), it.ID, it.EventID)
		}
	}
	for _, p := range total.Promoted {
		fmt.Fprintf(f.Out, "  promoted\t%s to hive %s (route %s)\n", p.SwarmID, p.HiveID, p.Route)
	}
	for _, id := range total.Archived {
		fmt.Fprintf(f.Out, "  archived\t%s (cap)\n", id)
	}
	return nil
}

func newCmdKnowledgeMigrate(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate [DIR | FILE]",
		Short: "Import a legacy .swarm/context.md (idempotent: same content, same entries)",
		Long: "Sections lessons learned, patterns, SME cache and decisions become entries of category\n" +
			"lesson, pattern, domain and decision (confidence 0.3). The project is --project, else the\n" +
			"name in package.json, else the directory name.",
		Example: "  lore knowledge migrate .\n  lore knowledge migrate path/to/.swarm/context.md --project web",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "."
			if len(args) == 1 {
				path = args[0]
			}
			dir := path
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				path = filepath.Join(path, ".swarm", "context.md")
			} else {
				dir = filepath.Dir(filepath.Dir(path))
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			project := projectFor(f, dir)
			var subs []events.KnowledgeSubmitted
			for _, it := range knowledge.ParseContextMD(string(b)) {
				subs = append(subs, it.Submission(project))
			}
			return sendImport(cmd, f, knowledge.FormatContextMD, project, subs, nil, nil)
		},
	}
}

func newCmdKnowledgeImport(f *Factory) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Import opencode-swarm knowledge.jsonl, shared-learnings.jsonl or their -rejected files",
		Long: "A line that is not JSON, holds a field of the wrong type or a value the server would refuse\n" +
			"is reported by its number (naming the field) and skipped; the other lines are imported.\n" +
			"Unknown fields are ignored; absent and null ones take their defaults. Importing the same\n" +
			"content twice adds nothing. Swarm entries without project_name go to --project.",
		Example: "  lore knowledge import .swarm/knowledge.jsonl --project web\n  lore knowledge import ~/.local/share/opencode-swarm/shared-learnings.jsonl",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			project := f.Project // lore's default project when empty
			for _, p := range args {
				fm := format
				if fm == "" {
					fm = knowledge.FormatOf(filepath.Base(p))
				}
				if fm == "" || fm == knowledge.FormatContextMD {
					return fmt.Errorf("%w: %s: unknown format; pass --format (knowledge.jsonl, shared-learnings.jsonl, knowledge-rejected.jsonl, shared-learnings-rejected.jsonl) or use migrate for context.md", errBadInput, p)
				}
				fh, err := os.Open(p)
				if err != nil {
					return fmt.Errorf("%w: %v", errBadInput, err)
				}
				recs, bad := knowledge.ReadJSONL(fh, fm, project)
				fh.Close()
				subs := make([]events.KnowledgeSubmitted, len(recs))
				lines := make([]int, len(recs))
				for i, r := range recs {
					subs[i], lines[i] = r.Submission, r.Line
				}
				if err := sendImport(cmd, f, fm, project, subs, lines, bad); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "file format (default: from the file name)")
	declare(cmd.Flags(), rules{"format": schemaEnum("knowledge.submitted/v1", "import.format")})
	return cmd
}

func newCmdKnowledgeExport(f *Factory) *cobra.Command {
	var tier, out string
	var rejected, all bool
	var part int
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write entries (or rejected lessons) as opencode-swarm JSONL",
		Long: "Write entries (or rejected lessons) as opencode-swarm JSONL. A store too large for one reply\n" +
			"is read in parts of --part records (2 000 when not given) and written as the same lines.",
		Example: "  lore knowledge export -o .swarm/knowledge.jsonl\n  lore knowledge export --tier hive -o shared-learnings.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := f.Out
			if out != "" && out != "-" {
				fh, err := os.Create(out)
				if err != nil {
					return err
				}
				defer fh.Close()
				w = fh
			}
			page := func(offset, limit int) any {
				return app.KnowledgeExportArgs{Tier: tier, Rejected: rejected, All: all, Offset: offset, Limit: limit}
			}
			count := func(r *app.KnowledgeExportResult) int { return len(r.Entries) + len(r.Rejected) }
			return callParts(cmd.Context(), f, "knowledge", "export", part, page, count, func(r *app.KnowledgeExportResult) error {
				if rejected {
					return knowledge.WriteJSONL(w, r.Rejected)
				}
				return knowledge.WriteJSONL(w, r.Entries)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&tier, "tier", "swarm", "swarm (this project) or hive")
	fl.BoolVar(&rejected, "rejected", false, "export the rejected lessons instead")
	fl.BoolVar(&all, "all", false, "include removed todos")
	fl.StringVarP(&out, "output", "o", "", "file to write (default stdout)")
	fl.IntVar(&part, "part", 0, "read the export in parts of this many records (default: in one reply, in parts of 2000 when it is too large for one)")
	declare(fl, rules{"tier": schemaEnum("knowledge.submitted/v1", "tier"), "part": atLeast(0)})
	freeText(fl, "output")
	return cmd
}

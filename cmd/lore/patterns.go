package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/api"
	"github.com/loredev/lore/app"
	"github.com/loredev/lore/projector/crossloop"
)

func init() {
	addCommand(newCmdPatterns)
	addCommand(newCmdExtract)
}

func newCmdPatterns(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "patterns", Short: "The cross-loop pattern registry: list, show, prune, export, import, metrics, config"}
	cmd.AddCommand(newCmdPatternsList(f), newCmdPatternsShow(f), newCmdPatternsPrune(f),
		newCmdPatternsExport(f), newCmdPatternsImport(f), newCmdPatternsMetrics(f), newCmdPatternsConfig(f))
	return cmd
}

func newCmdPatternsList(f *Factory) *cobra.Command {
	var flt crossloop.ListFilter
	var minR, maxR float64
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List patterns (rates: success rate, failure rate for anti-patterns)",
		Example: `  lore patterns list --type error
  lore patterns list --min-success-rate 0.0 --max-success-rate 0.6
  lore patterns list --from-loop ralph-fix-auth-a1b2c3d4
  lore patterns list --limit 100 --offset 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flt.Type != "" && !crossloop.ValidType(flt.Type) {
				return fmt.Errorf("%w: --type: %q is not error, success, anti or template", errBadInput, flt.Type)
			}
			if cmd.Flags().Changed("min-success-rate") {
				flt.MinSuccessRate = &minR
			}
			if cmd.Flags().Changed("max-success-rate") {
				flt.MaxSuccessRate = &maxR
			}
			ps, err := callList[*crossloop.Pattern](cmd, f, "patterns", "list", flt, func(offset, limit int) any {
				a := flt
				a.Offset, a.Limit = offset, limit
				return a
			})
			if err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(ps)
			}
			if len(ps) == 0 {
				fmt.Fprintln(f.Out, "No patterns match (the registry fills as loops complete: lore loop complete, lore patterns import).")
				return nil
			}
			names := map[string]string{crossloop.TypeError: "Error Patterns", crossloop.TypeSuccess: "Success Patterns",
				crossloop.TypeAnti: "Anti-Patterns", crossloop.TypeTemplate: "Code Templates"}
			for _, t := range crossloop.Types {
				var group []*crossloop.Pattern
				for _, p := range ps {
					if p.Type == t {
						group = append(group, p)
					}
				}
				if len(group) == 0 {
					continue
				}
				fmt.Fprintf(f.Out, "%s (%d total):\n", names[t], len(group))
				for i, p := range group {
					line := crossloop.FormatListLine(p)
					if p.Archived {
						line += " [archived " + p.ArchiveMonth + "]"
					}
					fmt.Fprintf(f.Out, "  %d. %s\n", i+1, line)
				}
				fmt.Fprintln(f.Out)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&flt.Type, "type", "", "error, success, anti or template")
	fl.Float64Var(&minR, "min-success-rate", 0, "lowest rate shown")
	fl.Float64Var(&maxR, "max-success-rate", 1, "highest rate shown")
	fl.StringVar(&flt.FromLoop, "from-loop", "", "only patterns with this loop in their lineage")
	fl.StringVar(&flt.Tag, "tag", "", "only patterns with this tag")
	fl.BoolVar(&flt.Archived, "archived", false, "include archived patterns")
	fl.IntVar(&flt.Offset, "offset", 0, "skip this many matching patterns (the order: type, then id)")
	fl.IntVar(&flt.Limit, "limit", 0, "list at most this many (0: all; a large registry is listed page by page with --offset)")
	declare(fl, rules{"type": domain("pattern-type"), "min-success-rate": between(0, 1), "max-success-rate": between(0, 1),
		"offset": atLeast(0), "limit": atLeast(0)})
	freeText(fl, "from-loop", "tag")
	return cmd
}

func newCmdPatternsShow(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show PATTERN_ID",
		Short: "Show one pattern: effectiveness, lineage, signature",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct {
				Text string `json:"text"`
			}
			var raw json.RawMessage
			if err := f.Call(cmd.Context(), "patterns", "show", map[string]string{"id": args[0]}, &raw); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(raw)
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			fmt.Fprint(f.Out, out.Text)
			return nil
		},
	}
}

func newCmdPatternsPrune(f *Factory) *cobra.Command {
	var dry bool
	var minR, maxAge float64
	var minUse int
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Archive patterns below the success rate (after enough uses) or unused too long",
		Example: `  lore patterns prune --dry-run
  lore patterns prune --min-success-rate 0.5
  lore patterns prune --max-age-days 90`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			args := map[string]any{"dry_run": dry}
			if cmd.Flags().Changed("min-success-rate") {
				args["min_success_rate"] = minR
			}
			if cmd.Flags().Changed("max-age-days") {
				args["max_age_days"] = maxAge
			}
			if cmd.Flags().Changed("min-usage-count") {
				args["min_usage_count"] = minUse
			}
			var res struct {
				Month    string                     `json:"month"`
				File     string                     `json:"archive_file"`
				DryRun   bool                       `json:"dry_run"`
				Patterns []crossloop.PruneCandidate `json:"patterns"`
			}
			if err := f.Call(cmd.Context(), "patterns", "prune", args, &res); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(res)
			}
			verb := "Archived"
			if res.DryRun {
				verb = "Would archive"
			}
			fmt.Fprintf(f.Out, "%s %d pattern(s) under %s (archive/%s)\n", verb, len(res.Patterns), res.Month, res.File)
			for _, c := range res.Patterns {
				fmt.Fprintf(f.Out, "  - %s (%s, rate %d%%, %d uses)\n", c.PatternID, c.Reason, crossloop.Pct(c.SuccessRate), c.UsageCount)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&dry, "dry-run", false, "show what would be archived")
	fl.Float64Var(&minR, "min-success-rate", 0.5, "archive below this rate (after --min-usage-count uses)")
	fl.IntVar(&minUse, "min-usage-count", 3, "uses before the rate is judged")
	fl.Float64Var(&maxAge, "max-age-days", 90, "archive patterns unused for more than this many days")
	declare(fl, rules{"min-success-rate": between(0, 1), "min-usage-count": atLeast(0), "max-age-days": atLeast(0)})
	return cmd
}

func newCmdPatternsExport(f *Factory) *cobra.Command {
	var output string
	var part int
	cmd := &cobra.Command{
		Use:   "export --output FILE|DIR",
		Short: "Export the registry: one shared-patterns document (FILE.json) or the folder layout (DIR)",
		Long: `Export the registry: one shared-patterns document (FILE.json) or the folder layout (DIR).
A registry whose document is larger than one NATS message (8 MiB by default)
is read in parts of --part patterns (2 000 when not given), each after the
last pattern id of the one before, and joined into the same document. Parts
are read one after another from the live registry: a pattern changed while
they are read is exported as the part that holds it found it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := exportRegistry(cmd.Context(), f, part)
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				return f.PrintJSON(doc)
			}
			n := len(doc.Registry.Error) + len(doc.Registry.Success) + len(doc.Registry.Anti) + len(doc.Registry.Template)
			if strings.HasSuffix(output, ".json") {
				if err := writeJSONFile(output, doc); err != nil {
					return err
				}
			} else if err := exportDir(output, doc); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(map[string]any{"output": output, "patterns": n, "archive_months": len(doc.Archive)})
			}
			fmt.Fprintf(f.Out, "Exported %d active pattern(s) and %d archive month(s) to %s\n", n, len(doc.Archive), output)
			return nil
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "FILE.json (one document) or a folder (patterns/, archive/, effectiveness-metrics.json)")
	cmd.Flags().IntVar(&part, "part", 0, "read the registry in parts of this many patterns (default: in one reply, in parts of 2000 when it is too large for one)")
	freeText(cmd.Flags(), "output")
	declare(cmd.Flags(), rules{"part": atLeast(0)})
	return cmd
}

// exportPart is the part size of an export too large for one reply.
const exportPart = 2000

// exportRegistry reads the registry's export: in one reply when part is 0
// and it fits, else in parts of part patterns (exportPart when 0), halved
// while a part is still too large for a reply, joined by
// crossloop.MergeExports into the document of the whole.
func exportRegistry(ctx context.Context, f *Factory, part int) (*crossloop.RegistryDoc, error) {
	if part == 0 {
		var doc crossloop.RegistryDoc
		err := f.Call(ctx, "patterns", "export", nil, &doc)
		if !errors.Is(err, app.ErrTooLarge) {
			return &doc, err
		}
		part = exportPart
	}
	var parts []*crossloop.RegistryDoc
	for after := ""; ; {
		var doc crossloop.RegistryDoc
		err := f.Call(ctx, "patterns", "export", app.ExportArgs{After: after, Limit: part}, &doc)
		if errors.Is(err, app.ErrTooLarge) && part > 1 {
			part /= 2
			continue
		}
		if err != nil {
			return nil, err
		}
		parts = append(parts, &doc)
		ids, err := crossloop.ExportIDs(&doc)
		if err != nil {
			return nil, err
		}
		if len(ids) < part {
			return crossloop.MergeExports(parts), nil
		}
		after = ids[len(ids)-1]
	}
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func exportDir(dir string, doc *crossloop.RegistryDoc) error {
	for _, t := range crossloop.Types {
		list := doc.Registry.ByType(t)
		if list == nil {
			list = []json.RawMessage{}
		}
		fd := crossloop.FileDoc{Version: doc.Version, Patterns: list}
		if err := writeJSONFile(filepath.Join(dir, "patterns", crossloop.TypeFile[t]), fd); err != nil {
			return err
		}
	}
	for _, a := range doc.Archive {
		if err := writeJSONFile(filepath.Join(dir, "archive", crossloop.ArchiveFile(a.Month)), a); err != nil {
			return err
		}
	}
	if doc.Metrics != nil {
		return writeJSONFile(filepath.Join(dir, crossloop.MetricsFile), doc.Metrics)
	}
	return nil
}

func newCmdPatternsImport(f *Factory) *cobra.Command {
	var input, typ string
	cmd := &cobra.Command{
		Use:   "import [--input] FILE|DIR ... [--type TYPE]",
		Short: "Import patterns from shared-patterns documents, per-type files or folders",
		Long: `Imports the seed's files: a shared-patterns document, per-type files
(error-patterns.json, success-patterns.json, anti-patterns.json,
code-templates.json, or any file with --type), archive month files, or a
folder: .aiwg/ralph/shared (patterns/ and archive/) or
.aiwg/ralph/shared/patterns itself. Every figure and time a file states is
kept. A pattern imported before (same content) or whose id the registry
holds is not imported again: a re-import reports 0 new and appends nothing.
--type imports only the patterns of one type.`,
		Example: `  lore patterns import --input team-patterns.json
  lore patterns import .aiwg/ralph/shared/patterns
  lore patterns import .aiwg/ralph/shared/patterns/*.json --type error`,
		RunE: func(cmd *cobra.Command, args []string) error {
			inputs := args
			if input != "" {
				inputs = append([]string{input}, args...)
			}
			if len(inputs) == 0 {
				return fmt.Errorf("%w: give --input FILE|DIR (or files and folders as arguments)", errBadInput)
			}
			if typ != "" && !crossloop.ValidType(typ) {
				return fmt.Errorf("%w: --type: %q is not error, success, anti or template", errBadInput, typ)
			}
			var files []importFile
			for _, in := range inputs {
				fs, err := importFiles(in)
				if err != nil {
					return fmt.Errorf("%w: %v", errBadInput, err)
				}
				files = append(files, fs...)
			}
			var total app.PatternsImportResult
			read := 0
			for _, fi := range files {
				if typ != "" && fi.typ != "" && fi.typ != typ {
					continue // a per-type file of another type
				}
				raw, err := os.ReadFile(fi.path)
				if err != nil {
					return fmt.Errorf("%w: %v", errBadInput, err)
				}
				ft := fi.typ
				if ft == "" {
					ft = typ
				}
				// A long file goes in parts, with a progress line on
				// stderr at most once a second.
				parts := splitRegistry(raw, ft, importPart)
				if parts == nil {
					parts = []importDoc{{raw: raw}}
				}
				res, err := sendParts(cmd.Context(), f, fi.path, ft, parts)
				if err != nil {
					return fmt.Errorf("%s: %w", fi.path, err)
				}
				total.Patterns += res.Patterns
				total.Existing += res.Existing
				total.Events += res.Events
				read++
			}
			if f.JSON {
				return f.PrintJSON(map[string]any{"inputs": inputs, "patterns": total.Patterns, "existing": total.Existing,
					"events": total.Events, "files": read})
			}
			fmt.Fprintf(f.Out, "Imported %d new pattern(s) from %d file(s); %d already in the registry\n", total.Patterns, read, total.Existing)
			return nil
		},
	}
	cmd.Flags().StringVar(&input, "input", "", "FILE (document or per-type file) or folder")
	cmd.Flags().StringVar(&typ, "type", "", "import only patterns of this type (error, success, anti, template)")
	freeText(cmd.Flags(), "input")
	declare(cmd.Flags(), rules{"type": domain("pattern-type")})
	return cmd
}

type importFile struct{ path, typ string }

// sendParts imports a file's parts in order. Each part but the last is
// replied once its events are stored, so the server folds it while the
// next part is read and decided; the last is replied once folded, and as
// the log is folded in order the whole file is then visible. When the
// last part appends nothing, or its fold was not reached in time (the
// reply is pending), the last part that appended is sent again until a
// reply says it is folded: its patterns then append nothing, or the same
// events (named by content, the log keeps one), whose fold is waited for.
func sendParts(ctx context.Context, f *Factory, path, ft string, parts []importDoc) (app.PatternsImportResult, error) {
	var total app.PatternsImportResult
	sum, start, last := 0, time.Now(), time.Now()
	for _, part := range parts {
		sum += part.n
	}
	call := func(part importDoc, noWait bool) (api.CommandReply, app.PatternsImportResult, error) {
		var res app.PatternsImportResult
		args := map[string]any{"document": json.RawMessage(part.raw), "type": ft, "source": path}
		reply, err := f.Command(ctx, "patterns", "import", args, noWait)
		if err == nil {
			err = json.Unmarshal(reply.Result, &res)
		}
		return reply, res, err
	}
	sent := 0
	var appended, confirmed int // parts that appended events; the last of them confirmed folded (+1)
	var folded bool
	for i, part := range parts {
		final := i == len(parts)-1
		reply, res, err := call(part, !final)
		if err != nil {
			return total, err
		}
		total.Patterns += res.Patterns
		total.Existing += res.Existing
		total.Events += res.Events
		if len(reply.Appended) > 0 {
			appended = i + 1
		}
		if final {
			folded = reply.Projected
			if len(reply.Appended) > 0 {
				confirmed = appended
			}
		}
		sent += part.n
		if len(parts) > 1 && sent < sum && time.Since(last) >= time.Second {
			fmt.Fprintf(f.Err, "%s: %d of %d patterns sent (%.0f/s)\n", path, sent, sum,
				float64(sent)/time.Since(start).Seconds())
			last = time.Now()
		}
	}
	// Each wait is bounded by the server (then pending): a backlog of at
	// most all the parts is folded after as many waits, or the projector
	// is stuck and the import stays pending, as a single request's would.
	for try := 0; appended > 0 && (confirmed != appended || !folded) && try <= len(parts); try++ {
		reply, _, err := call(parts[appended-1], false)
		if err != nil {
			return total, err
		}
		confirmed, folded = appended, reply.Projected
	}
	return total, nil
}

// importFiles resolves an input: a file (its type from its name when it
// is a per-type file) or a folder: the shared layout (patterns/*.json,
// archive/*-patterns.json) or a patterns folder itself (*.json by type).
func importFiles(input string) ([]importFile, error) {
	typeOf := func(name string) string {
		for t, n := range crossloop.TypeFile {
			if filepath.Base(name) == n {
				return t
			}
		}
		return ""
	}
	st, err := os.Stat(input)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []importFile{{input, typeOf(input)}}, nil
	}
	var out []importFile
	for _, dir := range []string{filepath.Join(input, "patterns"), input} {
		for _, t := range crossloop.Types {
			p := filepath.Join(dir, crossloop.TypeFile[t])
			if _, err := os.Stat(p); err == nil {
				out = append(out, importFile{p, t})
			}
		}
	}
	arch, _ := filepath.Glob(filepath.Join(input, "archive", "*-patterns.json"))
	for _, a := range arch {
		out = append(out, importFile{a, ""})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no %s (itself or under patterns/) or archive/*-patterns.json", input,
			strings.Join([]string{"error-patterns.json", "success-patterns.json", "anti-patterns.json", "code-templates.json"}, ", "))
	}
	return out, nil
}

func newCmdPatternsMetrics(f *Factory) *cobra.Command {
	var loops int
	cmd := &cobra.Command{
		Use:   "metrics",
		Short: "Cross-loop effectiveness: patterns by type, applications, improvement with injection",
		Long: `Cross-loop effectiveness: patterns by type, applications, improvement with injection.
With --json the answer also lists each completed loop's impact (every loop,
or the first --loops by loop id); the text shows the metrics alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res struct {
				M     crossloop.Metrics      `json:"effectiveness_metrics"`
				Loops []crossloop.LoopImpact `json:"loops"`
			}
			args := app.MetricsArgs{}
			if cmd.Flags().Changed("loops") {
				args.Loops = &loops
			} else if !f.JSON {
				args.Loops = new(int) // the text shows no loop: none is read
			}
			if err := f.Call(cmd.Context(), "patterns", "metrics", args, &res); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(res)
			}
			m := res.M
			fmt.Fprintf(f.Out, "Patterns: %d (error %d, success %d, anti %d, templates %d; archived %d)\n", m.TotalPatterns,
				m.PatternsByType.Error, m.PatternsByType.Success, m.PatternsByType.Anti, m.PatternsByType.Template, m.ArchivedPatterns)
			fmt.Fprintf(f.Out, "Applications: %d (%d successful, %d failed, %d%% success)\n", m.Usage.Total, m.Usage.Successful,
				m.Usage.Failed, crossloop.Pct(m.Usage.OverallSuccessRate))
			fmt.Fprintf(f.Out, "Loops with injection: %d (avg %.1f iterations); without: %d (avg %.1f); improvement %.1f%%\n",
				m.Benefit.With, m.Benefit.AvgWith, m.Benefit.Without, m.Benefit.AvgWithout, m.Benefit.Improvement)
			return nil
		},
	}
	cmd.Flags().IntVar(&loops, "loops", 0, "with --json: list the impacts of at most this many loops (default: every completed loop)")
	declare(cmd.Flags(), rules{"loops": atLeast(0)})
	return cmd
}

func newCmdExtract(f *Factory) *cobra.Command {
	var all bool
	var types string
	cmd := &cobra.Command{
		Use:   "extract [LOOP_ID] [--all] [--types error,success]",
		Short: "Extract patterns from a completed loop (or all completed loops) again",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == all {
				return fmt.Errorf("%w: give LOOP_ID or --all", errBadInput)
			}
			req := map[string]any{"all": all}
			if len(args) == 1 {
				req["loop_id"] = args[0]
			}
			if types != "" {
				var ts []string
				for _, t := range strings.Split(types, ",") {
					t = strings.TrimSpace(t)
					if !crossloop.ValidType(t) {
						return fmt.Errorf("%w: --types: %q is not error, success, anti or template", errBadInput, t)
					}
					ts = append(ts, t)
				}
				req["types"] = ts
			}
			var res map[string]any
			if err := f.Call(cmd.Context(), "patterns", "extract", req, &res); err != nil {
				return err
			}
			if f.JSON {
				return f.PrintJSON(res)
			}
			fmt.Fprintln(f.Out, "Extraction requested")
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "every completed loop")
	cmd.Flags().StringVar(&types, "types", "", "comma-separated types: error,success,anti,template")
	declare(cmd.Flags(), rules{"types": domain("pattern-types")})
	return cmd
}

func newCmdPatternsConfig(f *Factory) *cobra.Command {
	var file string
	var sets []string
	cmd := &cobra.Command{
		Use:   "config [--file FILE] [--set key=value ...]",
		Short: "Show the cross-loop configuration, or set it for every replica (--file, --set)",
		Long: `Without flags, shows the configuration in force: the seed's
ralph.cross_loop_learning keys (extraction.*, injection.*) and lore's pruning.*.

--file reads a configuration file, YAML or JSON: the block itself, or the
seed's aiwg.yml / .aiwg/config.yml holding it as ralph.cross_loop_learning
(the file's other settings are ignored); its keys are set over the
defaults. --set key=value (repeatable; key dotted, e.g.
injection.top_k_patterns=8) changes keys of the file, or of the
configuration in force without --file. An unknown key or an
out-of-range value is refused, naming it (exit code 2).`,
		Example: `  lore patterns config
  lore patterns config --set injection.top_k_patterns=8 --set extraction.similarity_threshold=0.85
  lore patterns config --file .aiwg/config.yml
  lore patterns config --as-of 2026-03-01T00:00:00Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			show := func(c json.RawMessage) error {
				if f.JSON {
					return f.PrintJSON(c)
				}
				return printConfigKeys(f, c)
			}
			if file == "" && len(sets) == 0 {
				var c json.RawMessage
				if err := f.Call(cmd.Context(), "patterns", "config", nil, &c); err != nil {
					return err
				}
				return show(c)
			}
			var doc []byte
			if file != "" {
				raw, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("%w: --file: %v", errBadInput, err)
				}
				if doc, err = crossloop.ConfigBlock(raw); err != nil {
					return fmt.Errorf("%w: --file %s: %v", errBadInput, file, err)
				}
			} else {
				var c json.RawMessage
				if err := f.Call(cmd.Context(), "patterns", "config", nil, &c); err != nil {
					return err
				}
				doc = c
			}
			doc, err := applyConfigSets(doc, sets)
			if err != nil {
				return err
			}
			if _, err := crossloop.ParseConfig(doc); err != nil { // the check the endpoint makes, before sending
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			var c json.RawMessage
			if err := f.Call(cmd.Context(), "patterns", "configure", map[string]json.RawMessage{"config": doc}, &c); err != nil {
				return err
			}
			if !f.JSON {
				fmt.Fprintln(f.Out, "configuration set")
			}
			return show(c)
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "configuration file, YAML or JSON (aiwg.yml, .aiwg/config.yml, or the cross_loop_learning block)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "key=value, dotted key (repeatable)")
	freeText(cmd.Flags(), "file", "set")
	return cmd
}

// printConfigKeys prints a configuration document as sorted "key = value" lines.
func printConfigKeys(f *Factory, raw json.RawMessage) error {
	var m map[string]map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	var lines []string
	for s, keys := range m {
		for k, v := range keys {
			b, _ := json.Marshal(v)
			lines = append(lines, s+"."+k+" = "+string(b))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(f.Out, l)
	}
	return nil
}

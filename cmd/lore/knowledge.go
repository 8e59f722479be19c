package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/events"
	"github.com/loredev/lore/projector/knowledge"
)

func init() {
	addCommand(newCmdKnowledge)
	addCommand(newCmdPhase)
}

// kCall calls a knowledge endpoint; with --json it prints the reply,
// otherwise human(out).
func kCall[T any](cmd *cobra.Command, f *Factory, group, name string, args any, human func(T)) error {
	var raw json.RawMessage
	if err := f.Call(cmd.Context(), group, name, args, &raw); err != nil {
		return err
	}
	if f.JSON {
		return f.PrintJSON(raw)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("decode reply of %s.%s: %w", group, name, err)
	}
	human(out)
	return nil
}

// kGet calls an endpoint and decodes its reply; with --json it prints the
// reply as well, for a caller that decides on its content (an exit code).
func kGet[T any](cmd *cobra.Command, f *Factory, group, name string, args any) (T, error) {
	var out T
	var raw json.RawMessage
	if err := f.Call(cmd.Context(), group, name, args, &raw); err != nil {
		return out, err
	}
	if f.JSON {
		if err := f.PrintJSON(raw); err != nil {
			return out, err
		}
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("decode reply of %s.%s: %w", group, name, err)
	}
	return out, nil
}

func printAddResult(f *Factory, r app.KnowledgeAddResult) {
	switch r.Outcome {
	case knowledge.OutcomeRejected:
		fmt.Fprintf(f.Out, "rejected (layer %d): %s\n", r.Layer, r.Reason)
	case knowledge.OutcomeReinforced:
		fmt.Fprintf(f.Out, "reinforced %s\n", r.DuplicateOf)
	case app.OutcomePending:
		fmt.Fprintf(f.Out, "submitted %s (the decision is pending: lore knowledge show %s)\n", r.EventID, r.ID)
	default:
		fmt.Fprintf(f.Out, "added %s\n", r.ID)
	}
	for _, p := range r.Promoted {
		fmt.Fprintf(f.Out, "promoted %s to hive %s (route %s)\n", p.SwarmID, p.HiveID, p.Route)
	}
	for _, id := range r.Archived {
		fmt.Fprintf(f.Out, "archived %s (cap)\n", id)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(f.Err, "warning: layer %d: %s\n", w.Layer, w.Reason)
	}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if c, cut := knowledge.TruncateUTF16(s, n, "…"); cut {
		return c
	}
	return s
}

func printEntries(w io.Writer, es []knowledge.Entry) {
	if len(es) == 0 {
		fmt.Fprintln(w, "no entries")
		return
	}
	for _, e := range es {
		fmt.Fprintf(w, "%s\t%s\t%-11s\t%.2f\t%s\t%s\n", shortID(e.ID), e.Tier, e.Status, e.Confidence, e.Category, oneLine(e.Lesson, 90))
	}
}

func newCmdKnowledge(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "knowledge",
		Short: "Swarm (per project) and hive (cross-project) lessons learned",
		Long: "Lessons agents learned: validated in three layers, deduplicated, reinforced by confirmations,\n" +
			"promoted to the hive, aged at every phase completion, quarantined, injected within a budget.",
	}
	cmd.AddCommand(newCmdKnowledgeList(f), newCmdKnowledgeShow(f), newCmdKnowledgeAdd(f),
		newCmdKnowledgeQuarantine(f), newCmdKnowledgeRestore(f), newCmdKnowledgePromote(f),
		newCmdKnowledgeCurate(f), newCmdKnowledgeRescan(f), newCmdKnowledgeMigrate(f), newCmdKnowledgeImport(f),
		newCmdKnowledgeExport(f), newCmdKnowledgeInject(f), newCmdKnowledgeOutcome(f),
		newCmdKnowledgeRejected(f), newCmdKnowledgeConfig(f), newCmdKnowledgeStats(f))
	return cmd
}

func newCmdKnowledgeList(f *Factory) *cobra.Command {
	var o knowledge.ListOptions
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List active entries of the project's swarm store and the hive",
		Example: "  lore knowledge list --tier hive\n  lore knowledge list --quarantined --archived --json\n  lore knowledge list --archived --text timeout --limit 100 --offset 100",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kCall(cmd, f, "knowledge", "list", o, func(es []knowledge.Entry) { printEntries(f.Out, es) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Tier, "tier", "", "swarm or hive (default both)")
	fl.StringVar(&o.Status, "status", "", "only this status (candidate, established, promoted, archived, quarantined)")
	fl.StringVar(&o.Category, "category", "", "only this category")
	fl.StringVar(&o.Tag, "tag", "", "only entries with this tag")
	fl.BoolVar(&o.AllProjects, "all-projects", false, "swarm entries of every project")
	fl.BoolVar(&o.Archived, "archived", false, "include archived entries")
	fl.BoolVar(&o.Quarantined, "quarantined", false, "include quarantined entries")
	fl.BoolVar(&o.All, "all", false, "include everything, removed todos too")
	fl.StringVar(&o.Text, "text", "", "only entries whose lesson or id holds this text (any case)")
	fl.IntVar(&o.Offset, "offset", 0, "skip this many matching entries (the listing's order: hive, then swarm, each oldest first)")
	fl.IntVar(&o.Limit, "limit", 0, "at most this many entries (0: all; a large store is listed page by page with --offset)")
	declare(fl, rules{"tier": schemaEnum("knowledge.submitted/v1", "tier"), "status": domain("knowledge-status"),
		"category": domain("knowledge-category"), "offset": atLeast(0), "limit": atLeast(0)})
	freeText(fl, "tag", "text")
	return cmd
}

func newCmdKnowledgeShow(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one entry (id or unique id prefix); the id of a merged submission shows the entry it went to",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kCall(cmd, f, "knowledge", "show", map[string]string{"id": args[0]}, func(v app.KnowledgeEntryView) {
				e := v.Entry
				if m := v.Merged; m != nil {
					how := "reinforced it"
					if m.Outcome == knowledge.OutcomeDropped {
						how = "a near-duplicate, dropped at import"
					}
					fmt.Fprintf(f.Out, "%s was merged into %s (%s)\n", m.ID, e.ID, how)
				}
				fmt.Fprintf(f.Out, "id:          %s\ntier:        %s\nstatus:      %s\nlesson:      %s\ncategory:    %s\ntags:        %s\nscope:       %s\nconfidence:  %.2f\n",
					e.ID, e.Tier, e.Status, e.Lesson, e.Category, strings.Join(e.Tags, ", "), e.Scope, e.Confidence)
				if e.Tier == knowledge.TierHive {
					fmt.Fprintf(f.Out, "source:      %s (encounter score %.2f)\n", e.SourceProject, e.EncounterScore)
				} else {
					fmt.Fprintf(f.Out, "project:     %s\n", e.Project)
				}
				fmt.Fprintf(f.Out, "confirmed:   %d (%d phases, %d projects)\nphases alive: %d\nshown:       %d (applied %d, helpful %d, harmful %d)\n",
					len(e.ConfirmedBy), e.DistinctPhases(), len(e.DistinctProjects()), e.PhasesAlive, e.Outcomes.Shown, e.Outcomes.Applied, e.Outcomes.Helpful, e.Outcomes.Harmful)
				for _, w := range e.Warnings {
					fmt.Fprintf(f.Out, "warning:     layer %d: %s\n", w.Layer, w.Reason)
				}
				for _, c := range e.Conflicts {
					fmt.Fprintf(f.Out, "conflicts:   %s\n", c)
				}
				if e.PromotedTo != "" {
					fmt.Fprintf(f.Out, "promoted to: %s\n", e.PromotedTo)
				}
				if e.MergedInto != "" {
					fmt.Fprintf(f.Out, "merged into: %s\n", e.MergedInto)
				}
				if e.QuarantineReason != "" {
					fmt.Fprintf(f.Out, "quarantined: %s (by %s)\n", e.QuarantineReason, e.ReportedBy)
				}
				if e.ArchiveReason != "" {
					fmt.Fprintf(f.Out, "archived:    %s\n", e.ArchiveReason)
				}
				if v.Health.Issue != "" {
					fmt.Fprintf(f.Out, "health:      %s\n", v.Health.Issue)
				}
			})
		},
	}
}

func newCmdKnowledgeAdd(f *Factory) *cobra.Command {
	var d events.KnowledgeSubmitted
	var conf float64
	var eligible, fastTrack bool
	cmd := &cobra.Command{
		Use:     "add LESSON",
		Short:   "Submit a lesson (rejected lessons are kept in the rejected list; exit code 5)",
		Example: `  lore knowledge add "Run bun test with --coverage before merging" --category testing --phase 3`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d.Lesson = args[0]
			if cmd.Flags().Changed("confidence") {
				d.Confidence = &conf
			}
			if cmd.Flags().Changed("hive-eligible") {
				d.HiveEligible = &eligible
			}
			if fastTrack {
				d.Tags = append(d.Tags, knowledge.FastTrackTag)
			}
			r, err := kGet[app.KnowledgeAddResult](cmd, f, "knowledge", "add", d)
			if err != nil {
				return err
			}
			if !f.JSON {
				printAddResult(f, r)
			}
			// With --json too, the exit code says a rejection.
			if r.Outcome == knowledge.OutcomeRejected {
				return fmt.Errorf("%w (layer %d: %s); it is kept in `lore knowledge rejected`", errRejected, r.Layer, r.Reason)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&d.Category, "category", "other", "process, architecture, tooling, security, testing, debugging, performance, integration, todo, other, lesson, pattern, domain, decision")
	fl.StringSliceVar(&d.Tags, "tag", nil, "tag (repeatable)")
	fl.StringVar(&d.Scope, "scope", "global", "global or stack:<name>")
	fl.Float64Var(&conf, "confidence", 0.5, "confidence in [0, 1]")
	fl.IntVar(&d.Phase, "phase", 1, "phase the lesson was learned in")
	fl.StringVar(&d.Tier, "tier", "swarm", "swarm (this project) or hive")
	fl.BoolVar(&eligible, "hive-eligible", false, "eligible for the hive after 3 confirming phases")
	fl.BoolVar(&fastTrack, "fast-track", false, "tag hive-fast-track: promote to the hive at once")
	declare(fl, rules{"category": domain("knowledge-category"), "scope": domain("knowledge-scope"), "confidence": between(0, 1),
		"phase": atLeast(1), "tier": schemaEnum("knowledge.submitted/v1", "tier")})
	freeText(fl, "tag")
	return cmd
}

func newCmdKnowledgeQuarantine(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "quarantine ID [REASON]",
		Short:   "Hide an entry (id or unique prefix) from queries and injection",
		Example: `  lore knowledge quarantine 3f1c2b8e "false positive"`,
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := map[string]string{"id": args[0]}
			if len(args) == 2 {
				a["reason"] = args[1]
			}
			return kCall(cmd, f, "knowledge", "quarantine", a, func(r map[string]string) { fmt.Fprintf(f.Out, "quarantined %s\n", r["id"]) })
		},
	}
}

func newCmdKnowledgeRestore(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "restore ID",
		Short: "Restore a quarantined entry (re-validated first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kCall(cmd, f, "knowledge", "restore", map[string]string{"id": args[0]}, func(r map[string]string) {
				fmt.Fprintf(f.Out, "restored %s (%s)\n", r["id"], r["status"])
			})
		},
	}
}

func newCmdKnowledgePromote(f *Factory) *cobra.Command {
	var from, category, scope string
	var tags []string
	cmd := &cobra.Command{
		Use:     "promote [TEXT | --from-swarm ID]",
		Short:   "Promote new text, or a swarm entry, to the hive",
		Example: "  lore knowledge promote \"Pin base image digests in CI\" --category tooling\n  lore knowledge promote --from-swarm 3f1c2b8e",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := events.KnowledgePromoted{EntryID: from, Category: category, Tags: tags, Scope: scope}
			if len(args) == 1 {
				a.Lesson = args[0]
			}
			if (a.EntryID == "") == (a.Lesson == "") {
				return fmt.Errorf("%w: give TEXT or --from-swarm ID", errBadInput)
			}
			return kCall(cmd, f, "knowledge", "promote", a, func(r map[string]string) { fmt.Fprintf(f.Out, "promoted to hive %s\n", r["hive_id"]) })
		},
	}
	cmd.Flags().StringVar(&from, "from-swarm", "", "swarm entry id or unique prefix")
	cmd.Flags().StringVar(&category, "category", "", "category of new text (default process)")
	cmd.Flags().StringVar(&scope, "scope", "", "scope of new text (default global)")
	cmd.Flags().StringSliceVar(&tags, "tag", nil, "tag of new text (repeatable)")
	declare(cmd.Flags(), rules{"category": domain("knowledge-category"), "scope": domain("knowledge-scope")})
	freeText(cmd.Flags(), "from-swarm", "tag")
	return cmd
}

func newCmdKnowledgeCurate(f *Factory) *cobra.Command {
	var a app.KnowledgeCurateArgs
	cmd := &cobra.Command{
		Use:   "curate [--llm [--max N]]",
		Short: "Run a curation pass (lifecycle steps, hive promotion checks) and report entry health; --llm asks the LLM curator too",
		Long: "The rule-based pass, and with --llm the LLM curator: the project's active swarm entries (the newest\n" +
			"--max, default 50) go to the OpenAI-compatible chat-completions server named by LORE_CURATOR_URL\n" +
			"(LORE_CURATOR_MODEL, LORE_CURATOR_API_KEY, LORE_CURATOR_TIMEOUT) where lore serves; each promote,\n" +
			"quarantine or merge recommendation the current state accepts is recorded as an event. Nothing is\n" +
			"sent unless configured; a failing, slow or malformed answer records nothing.",
		Example: "  lore knowledge curate\n  LORE_CURATOR_URL=http://127.0.0.1:11434 LORE_CURATOR_MODEL=llama3.1 lore serve &\n  lore knowledge curate --llm",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kCall(cmd, f, "knowledge", "curate", a, func(r app.KnowledgeCurateResult) {
				fmt.Fprintf(f.Out, "%d active entries; %d flagged, %d evergreen, %d eligible for the hive\n", r.Entries, len(r.Flagged), len(r.Evergreen), len(r.Eligible))
				for _, h := range r.Flagged {
					fmt.Fprintf(f.Out, "flagged\t%s\t%s\t%s\n", shortID(h.ID), h.Issue, oneLine(h.Lesson, 80))
				}
				for _, e := range r.Eligible {
					fmt.Fprintf(f.Out, "to hive\t%s\t%s\t%s\n", shortID(e.ID), e.Route, oneLine(e.Lesson, 80))
				}
				if l := r.LLM; l != nil {
					fmt.Fprintf(f.Out, "llm curator %s: %d entries sent; %d recommendations accepted, %d refused\n",
						l.Model, l.Candidates, l.Accepted, l.Refused)
					for _, rec := range l.Recommendations {
						what := rec.Action + " " + shortID(rec.ID)
						if rec.Into != "" {
							what += " into " + shortID(rec.Into)
						}
						if rec.Accepted {
							fmt.Fprintf(f.Out, "  %s: %s (%s)\n", what, rec.Result, rec.Reason)
						} else {
							fmt.Fprintf(f.Out, "  %s: refused: %s (%s)\n", what, rec.Refused, rec.Reason)
						}
					}
				}
			})
		},
	}
	cmd.Flags().BoolVar(&a.LLM, "llm", false, "also ask the LLM curator (LORE_CURATOR_URL where lore serves)")
	cmd.Flags().IntVar(&a.MaxEntries, "max", 0, "with --llm: most entries sent (default 50, at most 200)")
	declare(cmd.Flags(), rules{"max": between(0, app.MaxCuratorEntries)})
	return cmd
}

func newCmdKnowledgeRescan(f *Factory) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "rescan",
		Short: "Re-check stored entries against the current safety rules; quarantine those they reject",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kCall(cmd, f, "knowledge", "rescan", map[string]string{"reason": reason}, func(r knowledge.RescanReport) {
				fmt.Fprintf(f.Out, "%d entries scanned; %d quarantined\n", r.Scanned, r.Quarantined)
				reasons := make([]string, 0, len(r.ByReason))
				for k := range r.ByReason {
					reasons = append(reasons, k)
				}
				sort.Strings(reasons)
				for _, k := range reasons {
					fmt.Fprintf(f.Out, "%d\t%s\n", r.ByReason[k], k)
				}
				for _, h := range r.Entries {
					fmt.Fprintf(f.Out, "quarantined\t%s\t%s\t%s\n", shortID(h.ID), h.Tier, h.Reason)
				}
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "note kept on the quarantined entries")
	freeText(cmd.Flags(), "reason")
	return cmd
}

func newCmdKnowledgeInject(f *Factory) *cobra.Command {
	var a app.KnowledgeInjectArgs
	var headroom float64
	cmd := &cobra.Command{
		Use:     "inject --task TEXT [--headroom F]",
		Short:   "The budgeted knowledge block for a task (records what was shown)",
		Example: `  lore knowledge inject --task "add schema validation to the api" --headroom 0.45`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.Headroom = &headroom
			return kCall(cmd, f, "knowledge", "inject", a, func(r knowledge.Injection) {
				if r.Text == "" {
					fmt.Fprintf(f.Err, "nothing injected (regime %s)\n", r.Regime)
					return
				}
				fmt.Fprintln(f.Out, r.Text)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&a.Task, "task", "", "task text (ranks entries by relevance)")
	fl.Float64Var(&headroom, "headroom", 1, "fraction of the context window free: >0.6 full, 0.2-0.6 half, 0.05-0.2 quarter, <0.05 none")
	fl.StringSliceVar(&a.Scopes, "scope", nil, "extra scope to include, e.g. stack:go (repeatable)")
	declare(fl, rules{"headroom": between(0, 1), "scope": domain("knowledge-scope")})
	freeText(fl, "task")
	return cmd
}

func newCmdKnowledgeOutcome(f *Factory) *cobra.Command {
	var injection string
	cmd := &cobra.Command{
		Use:     "outcome ID applied|helpful|harmful",
		Short:   "Record what an agent made of an entry it was shown",
		Example: "  lore knowledge outcome 3f1c2b8e helpful",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := map[string]string{"id": args[0], "outcome": args[1], "injection_id": injection}
			return kCall(cmd, f, "knowledge", "outcome", a, func(r map[string]string) { fmt.Fprintf(f.Out, "%s %s\n", r["outcome"], r["id"]) })
		},
	}
	cmd.Flags().StringVar(&injection, "injection", "", "id of the injection that showed it")
	freeText(cmd.Flags(), "injection")
	return cmd
}

func newCmdKnowledgeRejected(f *Factory) *cobra.Command {
	var allProjects bool
	var limit int
	cmd := &cobra.Command{
		Use:   "rejected",
		Short: "Lessons refused by validation, and quarantine fingerprints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kCall(cmd, f, "knowledge", "rejected", map[string]any{"all_projects": allProjects, "limit": limit}, func(rs []knowledge.Rejected) {
				if len(rs) == 0 {
					fmt.Fprintln(f.Out, "no rejected lessons")
				}
				for _, r := range rs {
					fmt.Fprintf(f.Out, "%s\t%s\tlayer %d\t%s\t%s\n", shortID(r.ID), r.Kind, r.Layer, r.Reason, oneLine(r.Lesson, 70))
				}
			})
		},
	}
	cmd.Flags().BoolVar(&allProjects, "all-projects", false, "every project")
	cmd.Flags().IntVar(&limit, "limit", 0, "the newest N only")
	declare(cmd.Flags(), rules{"limit": atLeast(0)})
	return cmd
}

func newCmdKnowledgeConfig(f *Factory) *cobra.Command {
	var file string
	var sets []string
	cmd := &cobra.Command{
		Use:   "config [--file CONFIG.json] [--set key=value]...",
		Short: "Show the knowledge.* configuration, or set it (a JSON file, or keys over the configuration in force) for every replica",
		Long: "Without flags, the configuration in force. --file sets it from a JSON object of keys (over the\n" +
			"defaults) or a whole config with a knowledge object; --set key=value (repeatable; dotted keys\n" +
			"for nested ones, values read as JSON when they are) changes keys of the configuration in force,\n" +
			"or of the file's with --file. Unknown keys and values out of range are refused, naming the key.",
		Example: "  lore knowledge config\n  lore knowledge config --set enabled=false\n  lore knowledge config --set dedup_threshold=0.7 --set 'scope_filter=[\"global\",\"stack:go\"]'\n" +
			"  lore knowledge config --file knowledge.json   # {\"dedup_threshold\": 0.7} or {\"knowledge\": {...}}",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" && len(sets) == 0 {
				return kCall(cmd, f, "knowledge", "config", nil, func(c knowledge.Config) { _ = f.PrintJSON(c) })
			}
			var doc []byte
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("%w: %v", errBadInput, err)
				}
				doc = b
			} else {
				var cur json.RawMessage
				if err := f.Call(cmd.Context(), "knowledge", "config", nil, &cur); err != nil {
					return err
				}
				doc = cur
			}
			if len(sets) > 0 {
				if file != "" {
					doc = knowledge.ConfigKeys(doc)
				}
				b, err := applyConfigSets(doc, sets)
				if err != nil {
					return err
				}
				doc = b
			}
			if _, err := knowledge.ParseConfig(doc); err != nil {
				return fmt.Errorf("%w: %v", errBadInput, err)
			}
			return kCall(cmd, f, "knowledge", "configure", map[string]json.RawMessage{"config": doc}, func(c knowledge.Config) {
				fmt.Fprintln(f.Out, "configuration set")
			})
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "JSON file of knowledge.* keys")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "key=value over the configuration in force (repeatable)")
	freeText(cmd.Flags(), "file", "set")
	return cmd
}

func newCmdKnowledgeStats(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Count entries by tier and status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return kCall(cmd, f, "knowledge", "stats", nil, func(s knowledge.Stats) {
				for _, t := range []struct {
					name string
					m    map[string]int
				}{{"swarm", s.Swarm}, {"hive", s.Hive}} {
					fmt.Fprintf(f.Out, "%s:", t.name)
					for _, st := range []string{"candidate", "established", "promoted", "archived", "quarantined", "removed"} {
						fmt.Fprintf(f.Out, " %s=%d", st, t.m[st])
					}
					fmt.Fprintln(f.Out)
				}
				fmt.Fprintf(f.Out, "rejected: %d\n", s.Rejected)
			})
		},
	}
}

func newCmdPhase(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "phase", Short: "Phases of a project (a completion sweeps knowledge)"}
	cmd.AddCommand(&cobra.Command{
		Use:     "complete N",
		Short:   "Mark phase N of the project completed: knowledge sweep and hive promotion checks",
		Example: "  lore phase complete 3 --project web",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var n int
			if _, err := fmt.Sscanf(args[0], "%d", &n); err != nil || n < 1 {
				return fmt.Errorf("%w: phase %q must be a number >= 1", errBadInput, args[0])
			}
			return kCall(cmd, f, "phase", "complete", map[string]int{"phase": n}, func(r map[string]any) {
				fmt.Fprintf(f.Out, "phase %v of %v completed\n", r["phase"], r["project"])
			})
		},
	})
	return cmd
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
	"github.com/loredev/lore/importer/swarmtools"
)

func init() { addCommand(newCmdImport) }

func newCmdImport(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import another system's learning data (swarm-tools)"}
	cmd.AddCommand(newCmdImportSwarmTools(f))
	return cmd
}

// defaultSwarmDB is swarm-tools' global database.
func defaultSwarmDB() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "swarm-tools", "swarm.db")
}

// defaultMemories is swarm-tools' git-synced memories file, in the project.
const defaultMemories = ".hive/memories.jsonl"

func newCmdImportSwarmTools(f *Factory) *cobra.Command {
	var dbPath, memPath string
	var dry bool
	cmd := &cobra.Command{
		Use:   "swarm-tools",
		Short: "Import swarm-tools' database (outcomes, feedback, decompositions, memories) and .hive/memories.jsonl",
		Long: "Reads swarm-tools' libSQL/SQLite database (events: subtask_outcome, human_feedback,\n" +
			"decomposition_generated, memory_*; the memories table) and .hive/memories.jsonl, and imports\n" +
			"outcomes and feedback into the learning model with their original times (decompositions give\n" +
			"their epic's outcomes a strategy and text), and memories into knowledge through the validator.\n" +
			"Importing again appends nothing. The report counts rows read, imported, skipped (imported\n" +
			"before), rejected (with reasons) and names every bad row. Without --project, an event's\n" +
			"project is its project_key's base name and memories go to the default project.",
		Example: "  lore import swarm-tools\n  lore import swarm-tools --db ./swarm.db --memories .hive/memories.jsonl --project web --dry-run",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dbSet, memSet := cmd.Flags().Changed("db"), cmd.Flags().Changed("memories")
			rep := app.NewSwarmToolsReport()
			var rows swarmtools.Rows
			var sources []string
			if _, err := os.Stat(dbPath); err == nil || dbSet {
				r, err := swarmtools.ReadDB(cmd.Context(), dbPath)
				if err != nil {
					if errors.Is(err, swarmtools.ErrNoDatabase) {
						return fmt.Errorf("%w: --db %s: %v", errBadInput, dbPath, err)
					}
					return err
				}
				rows = r.Rows
				rep.Bad = append(rep.Bad, r.Bad...)
				for _, t := range r.Missing {
					fmt.Fprintf(f.Err, "%s: no %s table\n", dbPath, t)
				}
				sources = append(sources, dbPath)
			} else {
				fmt.Fprintf(f.Err, "no swarm-tools database at %s (pass --db)\n", dbPath)
			}
			if fh, err := os.Open(memPath); err == nil {
				mems, bad, err := swarmtools.ReadMemoriesJSONL(fh)
				fh.Close()
				if err != nil {
					return fmt.Errorf("%w: --memories %s: %v", errBadInput, memPath, err)
				}
				rows.Memories = append(rows.Memories, mems...)
				rep.Bad = append(rep.Bad, bad...)
				sources = append(sources, memPath)
			} else if memSet {
				return fmt.Errorf("%w: --memories: %v", errBadInput, err)
			} else {
				fmt.Fprintf(f.Err, "no %s here (pass --memories)\n", memPath)
			}
			if len(sources) == 0 {
				return fmt.Errorf("%w: nothing to import: no database at %s and no %s", errBadInput, dbPath, memPath)
			}
			chunks := swarmtools.Chunks(rows, swarmtools.ChunkRows)
			last := time.Now()
			for i, ch := range chunks {
				if i > 0 && time.Since(last) >= time.Second {
					fmt.Fprintf(f.Err, "swarm-tools: chunk %d of %d\n", i+1, len(chunks))
					last = time.Now()
				}
				var r app.SwarmToolsReport
				args := app.ImportSwarmToolsArgs{Project: f.Project, Events: ch.Events, Memories: ch.Memories, DryRun: dry}
				if err := f.Call(cmd.Context(), "import", "swarm_tools", args, &r); err != nil {
					return err
				}
				rep.Add(r)
			}
			rep.DryRun = dry
			if f.JSON {
				return f.PrintJSON(rep)
			}
			printSwarmToolsReport(f, rep)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dbPath, "db", defaultSwarmDB(), "swarm-tools database (libSQL/SQLite file)")
	fl.StringVar(&memPath, "memories", defaultMemories, "swarm-tools memories JSONL (git-synced)")
	fl.BoolVar(&dry, "dry-run", false, "convert and validate, append nothing, report what would be imported")
	freeText(fl, "db", "memories")
	return cmd
}

func printSwarmToolsReport(f *Factory, r app.SwarmToolsReport) {
	counts := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k, n := range m {
			if n != 0 {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		total := 0
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, m[k])
			total += m[k]
		}
		if total == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
	}
	verb := "imported"
	if r.DryRun {
		verb = "would import"
	}
	fmt.Fprintf(f.Out, "read %s\n", counts(r.Read))
	fmt.Fprintf(f.Out, "%s %s\n", verb, counts(r.Imported))
	fmt.Fprintf(f.Out, "skipped (imported before) %s\n", counts(r.Skipped))
	fmt.Fprintf(f.Out, "rejected %d\n", len(r.Rejected))
	for _, x := range r.Rejected {
		fmt.Fprintf(f.Out, "  %s: layer %d: %s\n", x.Row, x.Layer, x.Reason)
	}
	for _, m := range r.Merged {
		fmt.Fprintf(f.Out, "merged %s into %s\n", m.Row, m.Into)
	}
	fmt.Fprintf(f.Out, "bad rows %d\n", len(r.Bad))
	for _, b := range r.Bad {
		fmt.Fprintf(f.Out, "  %s: %s\n", b.Ref, b.Reason)
	}
	fmt.Fprintf(f.Out, "not imported %d\n", len(r.NotImported))
	for _, n := range r.NotImported {
		fmt.Fprintf(f.Out, "  %s: %s\n", n.Ref, n.Reason)
	}
	if r.Pending {
		fmt.Fprintln(f.Out, "some decisions are pending (the fold has not caught up): run the import again to see them")
	}
}

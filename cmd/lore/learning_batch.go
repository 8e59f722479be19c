package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/loredev/lore/app"
)

// lore maturity observe-batch: many pattern observations from a JSON Lines
// file, sent to learning.observe_patterns in requests of
// app.MaxObservationsPerRequest.

func newCmdMaturityObserveBatch(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "observe-batch [FILE]",
		Short: "Record many pattern observations from JSON Lines (one observe's arguments per line)",
		Long: fmt.Sprintf(`Record many pattern observations in few requests. Each line of FILE (stdin
when FILE is - or absent) is one observation, with the arguments of
learning.observe_pattern: {"content" or "pattern_id", "success", "bead_id"?,
"tags"?, "time"?}. Every line is checked as lore maturity observe checks its
flags, before anything is sent; a bad line is named (exit code 2) and nothing
is recorded. Observations are sent in requests of %d, each recorded whole or
not at all; with --id a rerun records nothing twice.`, app.MaxObservationsPerRequest),
		Example: `  printf '%s\n' '{"content":"Split by file type","success":true}' \
    '{"content":"Split by file type","success":false,"bead_id":"bd-1"}' | lore maturity observe-batch
  lore maturity observe-batch observations.jsonl --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := f.In
			if len(args) == 1 && args[0] != "-" {
				file, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("%w: %v", errBadInput, err)
				}
				defer file.Close()
				in = file
			}
			items, lines, err := readObservations(in)
			if err != nil {
				return err
			}
			total := app.LearningObservedBatch{Patterns: []app.LearningObservedPattern{}}
			at := map[string]int{}
			for k := 0; k < len(items); k += app.MaxObservationsPerRequest {
				chunk := items[k:min(k+app.MaxObservationsPerRequest, len(items))]
				var res app.LearningObservedBatch
				if err := f.Call(cmd.Context(), "learning", "observe_patterns", map[string]any{"observations": chunk}, &res); err != nil {
					return fmt.Errorf("observations from line %d: %w (%d recorded before)", lines[k], err, k)
				}
				total.Observed += res.Observed
				for _, p := range res.Patterns {
					i, ok := at[p.PatternID]
					if !ok {
						i = len(total.Patterns)
						at[p.PatternID] = i
						total.Patterns = append(total.Patterns, app.LearningObservedPattern{PatternID: p.PatternID})
					}
					t := &total.Patterns[i]
					t.Successes += p.Successes
					t.Failures += p.Failures
					t.Maturity = p.Maturity
				}
			}
			if f.JSON {
				return f.PrintJSON(total)
			}
			fmt.Fprintf(f.Out, "recorded %d observations of %d patterns\n", total.Observed, len(total.Patterns))
			for _, p := range total.Patterns {
				fmt.Fprintf(f.Out, "%s\t+%d/-%d\t%s\n", p.PatternID, p.Successes, p.Failures, orDash(string(p.Maturity)))
			}
			return nil
		},
	}
}

var observationIndex = regexp.MustCompile(`^observations\[(\d+)\]: `)

// readObservations reads JSON Lines (blank lines skipped) and checks every
// observation by app.LearningObservations's rule; it returns the
// observations and the line number of each.
func readObservations(r io.Reader) ([]json.RawMessage, []int, error) {
	var items []json.RawMessage
	var lines []int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			return nil, nil, fmt.Errorf("%w: line %d: not a JSON object", errBadInput, n)
		}
		items, lines = append(items, append(json.RawMessage(nil), line...)), append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("read observations: %w", err)
	}
	if len(items) == 0 {
		return nil, nil, fmt.Errorf("%w: no observation given (one JSON object per line)", errBadInput)
	}
	// Checked in the requests they will be sent in.
	for k := 0; k < len(items); k += app.MaxObservationsPerRequest {
		list, err := json.Marshal(items[k:min(k+app.MaxObservationsPerRequest, len(items))])
		if err != nil {
			return nil, nil, fmt.Errorf("encode observations: %w", err)
		}
		var checked app.LearningObservations
		if err := json.Unmarshal(list, &checked); err != nil {
			msg := err.Error()
			if m := observationIndex.FindStringSubmatch(msg); m != nil {
				i, _ := strconv.Atoi(m[1])
				msg = fmt.Sprintf("line %d: %s", lines[k+i], msg[len(m[0]):])
			}
			return nil, nil, fmt.Errorf("%w: %s", errBadInput, msg)
		}
	}
	return items, lines, nil
}

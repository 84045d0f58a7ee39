package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/incident-replay/incident-replay/harness"
)

func init() { register(newMergeCmd) }

type mergeOptions struct {
	markdown, junit, report string
	repro                   bool
}

func newMergeCmd() *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge DIR|FILE...",
		Short: "Join the results of 'score --shard i/n' runs into one scorecard and its reports",
		Long: `merge reads the results files that 'score --shard i/n --results FILE' wrote (each FILE, and
every *.json in each DIR), checks that they are all the shards of one matrix, each once, and
prints and writes the scorecard, Markdown, JUnit and HTML report the whole matrix run at once
gives. The merged wall time is the longest shard's.

Exit status: 0 when every must-pass tool reached each scenario's expected verdict, 3 when one
missed, 1 on other errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			card, err := mergeResults(args)
			if err != nil {
				return err
			}
			if o.repro {
				card = card.Reproducible()
			}
			return writeCard(cmd.OutOrStdout(), cmd.ErrOrStderr(), card, o.markdown, o.junit, o.report)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.markdown, "markdown", "", "also write the scorecard as Markdown to this file")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.StringVar(&o.report, "report", "", "also write the HTML report into this directory")
	f.BoolVar(&o.repro, "reproducible", false, "leave out what depends on the machine (wall times, the runs' loopback ports)")
	return cmd
}

// mergeResults reads every results file the arguments name and merges them.
func mergeResults(args []string) (harness.Scorecard, error) {
	var paths []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return harness.Scorecard{}, fmt.Errorf("merge: %w", err)
		}
		if !st.IsDir() {
			paths = append(paths, a)
			continue
		}
		found, err := filepath.Glob(filepath.Join(a, "*.json"))
		if err != nil {
			return harness.Scorecard{}, fmt.Errorf("merge: %w", err)
		}
		if len(found) == 0 {
			return harness.Scorecard{}, fmt.Errorf("merge: %s holds no *.json results file", a)
		}
		slices.Sort(found)
		paths = append(paths, found...)
	}
	var files []harness.Results
	for _, p := range paths {
		f, err := harness.ReadResults(p)
		if err != nil {
			return harness.Scorecard{}, err
		}
		files = append(files, f)
	}
	return harness.Merge(files)
}

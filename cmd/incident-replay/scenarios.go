package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/spf13/cobra"
)

func init() { register(newScenariosCmd) }

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List, show and validate incident scenarios",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the embedded scenario catalogue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := scenarios.Catalogue()
			if err != nil {
				return err
			}
			return listScenarios(cmd.OutOrStdout(), all)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a catalogue scenario's file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := scenarios.FileText(args[0])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	})
	var seed int64
	var opts scenarios.LoadOptions
	validate := &cobra.Command{
		Use:   "validate [FILES...]",
		Short: "Validate and compile scenario files (the whole catalogue when no file is given)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return validateScenarios(cmd.OutOrStdout(), args, seed, opts)
		},
	}
	validate.Flags().Int64Var(&seed, "seed", 1, "seed for the compile check")
	validate.Flags().BoolVar(&opts.AllowOutsideLog, "allow-outside-log", false, "let a recorded log be a symlink or lie outside the scenario's directory")
	cmd.AddCommand(validate)
	return cmd
}

func listScenarios(w io.Writer, all []*scenarios.Scenario) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROFILE\tVERDICT\tSUMMARY")
	for _, s := range all {
		sum := s.Summary
		if len(sum) > 90 {
			sum = sum[:87] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Profile, s.Expect.Verdict, sum)
	}
	return tw.Flush()
}

// validateScenarios loads, compiles and checks each file against its own expect block;
// every problem is printed, and the command fails if any file has one.
func validateScenarios(w io.Writer, files []string, seed int64, opts scenarios.LoadOptions) error {
	var list []*scenarios.Scenario
	var errs []error
	if len(files) == 0 {
		all, err := scenarios.Catalogue()
		if err != nil {
			return err
		}
		list = all
	}
	for _, f := range files {
		s, err := scenarios.LoadFileWith(f, opts)
		if err != nil {
			fmt.Fprintln(w, err)
			errs = append(errs, err)
			continue
		}
		list = append(list, s)
	}
	for _, s := range list {
		c, err := scenarios.Compile(s, seed)
		if err == nil {
			err = s.Expect.Check(c.Predict())
		}
		if err != nil {
			fmt.Fprintf(w, "%s: %v\n", s.Path, err)
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(w, "ok  %s (%d timeline entries)\n", s.Name, len(c.Timeline.Entries))
	}
	if len(errs) > 0 {
		total := len(list)
		if len(files) > 0 {
			total = len(files)
		}
		return fmt.Errorf("%d of %d scenarios invalid", len(errs), total)
	}
	return nil
}

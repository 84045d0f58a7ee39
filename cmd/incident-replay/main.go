// Command incident-replay is the harness CLI: score tools against scenarios, manage the
// scenario catalogue, author scenarios from captured logs, and read GPU hosts.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// subcommands are added by the files that define them, one file per subcommand.
var subcommands []func() *cobra.Command

func register(c func() *cobra.Command) { subcommands = append(subcommands, c) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "incident-replay",
		Short:         "Replay SGLang launch incidents and score readiness tools against them",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range subcommands {
		root.AddCommand(c())
	}
	return root
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "incident-replay:", err)
		os.Exit(exitCode(err))
	}
}

// exitCoder lets a subcommand choose the process exit status (e.g. score's must-pass misses).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if ec, ok := err.(exitCoder); ok {
		return ec.ExitCode()
	}
	return 1
}

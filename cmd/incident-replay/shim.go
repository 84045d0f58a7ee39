package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

func init() { register(newShimCmd) }

func newShimCmd() *cobra.Command {
	var o harness.ShimOptions
	cmd := &cobra.Command{
		Use:   "shim DIR",
		Short: "Write python/python3/sglang wrappers that replay SGLang launches with fakesglang",
		Long: `shim writes DIR/python, DIR/python3 and DIR/sglang. With DIR first on PATH, an unmodified
launch script's "python -m sglang.launch_server FLAGS" and "sglang serve FLAGS" run fakesglang
with the same FLAGS on the host of --scenario (for a modelled scenario the FLAGS decide the
outcome: --tp 8 --hicache-size 300 on the 449 GB founding host dies, 48 fits); every other
python invocation goes to the real interpreter.

  incident-replay shim /tmp/shim --scenario hicache-48-cold-start --speed 60
  PATH=/tmp/shim:$PATH ./launch.sh`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if o.Self, err = os.Executable(); err != nil {
				return err
			}
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if o.Fakesglang == "" {
				if o.Fakesglang, err = findOutside(dir, "fakesglang", filepath.Dir(o.Self)); err != nil {
					return fmt.Errorf("%w: build it (go build -o bin/fakesglang ./cmd/fakesglang) or pass --fakesglang", err)
				}
			}
			if o.Python == "" {
				if o.Python, err = findOutside(dir, "python3", ""); err != nil {
					return fmt.Errorf("%w: pass --python with the real interpreter", err)
				}
			}
			if _, err := scenarios.Resolve(o.Scenario); err != nil {
				return err
			}
			if err := harness.WriteShim(dir, o); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/{python,python3,sglang}; run your launch script with PATH=%s:$PATH\n", dir, dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scenario, "scenario", "hicache-48-cold-start", "scenario (catalogue name or file) whose host and model launches run on")
	f.Float64Var(&o.Speed, "speed", 1, "time compression of the fake server")
	f.StringVar(&o.Fakesglang, "fakesglang", "", "fakesglang binary (default: next to incident-replay, then PATH)")
	f.StringVar(&o.Python, "python", "", "real python3 for non-SGLang invocations (default: PATH outside DIR)")
	cmd.AddCommand(newShimExecCmd())
	return cmd
}

// newShimExecCmd is what the wrappers call: it fits the scenario to the launch's flags and
// replaces itself with fakesglang, so signals and the exit status are fakesglang's own.
func newShimExecCmd() *cobra.Command {
	var scenario, fake, cache string
	var speed float64
	cmd := &cobra.Command{
		Use:    "exec --scenario S --fakesglang PATH --cache DIR -- FLAGS...",
		Short:  "Run one shimmed launch (called by the wrappers)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, flags []string) error {
			base, err := scenarios.Resolve(scenario)
			if err != nil {
				return err
			}
			data, err := harness.ShimScenario(base, flags)
			if err != nil {
				return err
			}
			path, err := harness.CacheScenario(cache, data)
			if err != nil {
				return err
			}
			argv := append([]string{fake, "--scenario", path, "--speed", strconv.FormatFloat(speed, 'g', -1, 64)}, flags...)
			return syscall.Exec(fake, argv, os.Environ())
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "", "scenario name or file")
	cmd.Flags().StringVar(&fake, "fakesglang", "", "fakesglang binary")
	cmd.Flags().StringVar(&cache, "cache", "", "directory for fitted scenario files")
	cmd.Flags().Float64Var(&speed, "speed", 1, "time compression")
	return cmd
}

// findOutside looks name up in first, then on PATH, skipping skip (the shim directory, so a
// wrapper never resolves to itself).
func findOutside(skip, name, first string) (string, error) {
	dirs := filepath.SplitList(os.Getenv("PATH"))
	if first != "" {
		dirs = append([]string{first}, dirs...)
	}
	for _, d := range dirs {
		if d == "" || filepath.Clean(d) == filepath.Clean(skip) {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			if strings.Contains(p, "/shims/") { // pyenv: resolve to the interpreter behind the shim
				if out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output(); err == nil {
					return strings.TrimSpace(string(out)), nil
				}
			}
			return filepath.Abs(p)
		}
	}
	return "", errors.New(name + " not found")
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/scenarios/author"
	"github.com/spf13/cobra"
)

func init() { register(newAuthorCmd) }

func newAuthorCmd() *cobra.Command {
	var out, rulesFile, name string
	var check bool
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "author LOG [-o scenario.yaml] [--check] [--redact-rules FILE] [--name NAME] [--duration D]",
		Short: "Write a scenario from a captured SGLang log (redacted), optionally replaying it to check",
		Long: `Reads a captured SGLang server log (any variant: docker compose / Docker Desktop / Loki /
parent-logger / Dynamo wrappers, glued or carriage-return progress bars, CRLF, time-only headers,
truncated heads and tails; "-" reads stdin) and writes a scenario that replays it: the redacted log
as a recorded timeline, with the profile (era), ranks, launch flags (from the server_args line,
ServerArgs(...) or era-C dict form), warmup and probe behaviour, and an expect block (bound, ready,
dead, exit code, verdict) read off the log. The inferred facts, the probe patterns (client, route,
interval, statuses) and every line that could not be parsed (with its line number) are written as
comments at the top of the file and to stderr. No line is dropped.

Redaction runs on every line before anything is inferred. Default rules, in order:
` + rulesHelp(scenarios.DefaultRedactRules()) + `
--redact-rules FILE overlays a YAML list of rules on these: a rule with a default's name replaces
it (or switches it off with "disable: true"), a new name is appended. Each rule is
{name, regex, replace[, keep]}: regex is Go RE2 applied per line; in replace, $1/${name} expand
groups and {n} is a stable pseudonym number (the order in which the rule first saw the value of
the group named "key", or of the whole match); a value fully matching keep is left alone. The
same input and rules always give the same output.

The log is read as a stream and embedded in the scenario, so it must fit in a scenario file
(scenarios.MaxFileBytes, 2 MiB): a longer capture is refused at the line that passes the limit;
author the part that matters (the startup and its ending).

A log without any timestamp is authored in file order: its lines are placed 100ms apart, or spread
evenly over --duration D (timeline.recorded.spacing); the report says so.

--check replays the written scenario (load, compile, render the timeline as a run prints it,
parse) and compares it with the input by line kind and order, and by phase durations (within 1%);
it prints the first differences and exits 1 on a mismatch.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := author.Options{Name: name, Duration: duration}
			return runAuthor(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], out, rulesFile, opts, check)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "-", `scenario file to write ("-" for stdout)`)
	cmd.Flags().StringVar(&rulesFile, "redact-rules", "", "YAML list of redaction rules overlaid on the defaults")
	cmd.Flags().StringVar(&name, "name", "", "scenario name (default: from the log's file name)")
	cmd.Flags().BoolVar(&check, "check", false, "replay the authored scenario and diff it against the log")
	cmd.Flags().DurationVar(&duration, "duration", 0, "how long a log without timestamps lasted: its lines are spread over it (default 100ms apart)")
	return cmd
}

func rulesHelp(rules []scenarios.RedactRule) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "  %-14s %s -> %s", r.Name, r.Regex, r.Replace)
		if r.Keep != "" {
			fmt.Fprintf(&b, "  (keep %s)", r.Keep)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func runAuthor(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, logPath, out, rulesFile string, opts author.Options, check bool) error {
	rules, err := authorRules(rulesFile)
	if err != nil {
		return err
	}
	source := filepath.Base(logPath)
	if logPath == "-" {
		source = "stdin"
		if opts.Name == "" && out != "-" {
			opts.Name = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
		}
	}
	opts.Source, opts.Rules = source, rules
	// The log streams through author; only --check on stdin keeps a copy, to compare against.
	in := stdin
	var stdinCopy bytes.Buffer
	if logPath != "-" {
		f, err := os.Open(logPath)
		if err != nil {
			return fmt.Errorf("author: %w", err)
		}
		defer f.Close()
		in = f
	} else if check {
		in = io.TeeReader(stdin, &stdinCopy)
	}
	a, err := author.FromLog(ctx, in, opts)
	if err != nil {
		return err
	}
	printAuthorReport(stderr, logPath, &a.Report)
	if out == "-" {
		if _, err := stdout.Write(a.YAML); err != nil {
			return err
		}
	} else {
		if err := os.WriteFile(out, a.YAML, 0o644); err != nil {
			return fmt.Errorf("author: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", out)
	}
	if !check {
		return nil
	}
	data := stdinCopy.Bytes()
	if logPath != "-" {
		if data, err = os.ReadFile(logPath); err != nil {
			return fmt.Errorf("author --check: %w", err)
		}
	}
	res, err := author.Check(data, a.YAML, out, 10)
	if err != nil {
		return fmt.Errorf("author --check: %w", err)
	}
	if res.OK() {
		fmt.Fprintf(stderr, "check: replayed %d lines: kinds and order match the log; %d phases match within 1%%\n", res.Replayed, len(res.Phases))
		return nil
	}
	fmt.Fprintf(stderr, "check: MISMATCH: input %d lines, replay %d lines\n", res.Lines, res.Replayed)
	for _, d := range res.Diffs {
		fmt.Fprintf(stderr, "  %s\n", d)
	}
	if res.PhaseMismatch != "" {
		fmt.Fprintf(stderr, "  phases: %s\n", res.PhaseMismatch)
	}
	return errors.New("author --check: the replayed scenario differs from the log (see above)")
}

// authorRules are the default redaction rules with --redact-rules overlaid.
func authorRules(rulesFile string) ([]scenarios.RedactRule, error) {
	rules := scenarios.DefaultRedactRules()
	if rulesFile == "" {
		return rules, nil
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		return nil, fmt.Errorf("author: --redact-rules: %w", err)
	}
	extra, err := scenarios.ParseRedactRules(rulesFile, b)
	if err != nil {
		return nil, err
	}
	return scenarios.MergeRedactRules(rules, extra), nil
}

func printAuthorReport(w io.Writer, logPath string, r *author.Report) {
	fmt.Fprintf(w, "%s: %d lines, profile %s (era %s), %d rank(s)\n", logPath, r.Lines, r.Profile, r.Era, r.Ranks)
	for _, e := range r.Evidence {
		fmt.Fprintf(w, "  profile evidence: %s\n", e)
	}
	fmt.Fprintf(w, "  flags: %s\n", r.Flags)
	var ps []string
	for _, p := range r.Phases {
		ps = append(ps, fmt.Sprintf("%s %s", p.Name, p.D()))
	}
	fmt.Fprintf(w, "  phases: %s\n", strings.Join(ps, ", "))
	fmt.Fprintf(w, "  ending: %s; verdict %s\n", r.Ending, r.Expect.Verdict)
	for _, p := range r.Probes {
		fmt.Fprintf(w, "  probe: %s\n", p)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "  flag not carried: %s\n", d)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, c := range r.Redaction {
		if c.Replaced > 0 {
			fmt.Fprintf(w, "  redacted: %s x%d (%d distinct)\n", c.Rule, c.Replaced, c.Distinct)
		}
	}
	if len(r.Unparsed) > 0 {
		fmt.Fprintf(w, "  %d line(s) could not be parsed (kept verbatim):\n", len(r.Unparsed))
		for _, u := range r.Unparsed {
			fmt.Fprintf(w, "    %s:%s\n", logPath, strings.TrimPrefix(u.String(), "line "))
		}
	}
}

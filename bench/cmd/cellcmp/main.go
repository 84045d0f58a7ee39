// Command cellcmp compares two `incident-replay score --results` files cell by cell: the
// verdicts must be equal, and the claim times (scenario time after the run's start) equal
// within a tolerance by tool kind. It prints every cell that differs and exits 1 if any does.
//
//	go run ./bench/cmd/cellcmp [-go 1s] [-shell 5s] BASE.json OTHER.json
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/incident-replay/incident-replay/harness"
)

func main() {
	goTol := flag.Duration("go", time.Second, "claim-time tolerance for Go tools")
	shellTol := flag.Duration("shell", 5*time.Second, "claim-time tolerance for shell tools (and traced programs)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: cellcmp [-go D] [-shell D] BASE.json OTHER.json")
		os.Exit(2)
	}
	base, err := harness.ReadResults(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cellcmp:", err)
		os.Exit(2)
	}
	other, err := harness.ReadResults(flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cellcmp:", err)
		os.Exit(2)
	}
	type key struct{ scenario, tool string }
	theirs := map[key]harness.StoredResult{}
	for _, r := range other.Results {
		theirs[key{r.Scenario, r.Tool}] = r
	}
	var cells, verdicts, times, missing int
	var worstGo, worstShell time.Duration
	for _, a := range base.Results {
		b, ok := theirs[key{a.Scenario, a.Tool}]
		if !ok {
			missing++
			continue
		}
		cells++
		da, db := a.Claim.At.Sub(a.Start), b.Claim.At.Sub(b.Start)
		d := (db - da).Abs()
		tol := *shellTol
		if a.Kind == "go" {
			tol = *goTol
			worstGo = max(worstGo, d)
		} else {
			worstShell = max(worstShell, d)
		}
		switch {
		case a.Verdict != b.Verdict:
			verdicts++
			fmt.Printf("%s x %s: verdict %s at %s vs %s at %s\n", a.Scenario, a.Tool, a.Verdict, harness.FormatDuration(da), b.Verdict, harness.FormatDuration(db))
		case d > tol:
			times++
			fmt.Printf("%s x %s: %s claimed at %s vs %s (%s apart, tolerance %s)\n", a.Scenario, a.Tool, a.Verdict, harness.FormatDuration(da), harness.FormatDuration(db), d, tol)
		}
	}
	fmt.Printf("%d cells: %d verdicts differ, %d claim times out of tolerance, %d missing; largest claim-time gap %s (Go tools), %s (shell tools)\n",
		cells, verdicts, times, missing, worstGo, worstShell)
	if verdicts+times+missing > 0 {
		os.Exit(1)
	}
}

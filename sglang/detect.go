package sglang

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Evidence is one fact of a log that narrows down the release that printed it.
type Evidence struct {
	Line     int      // physical line number of the first line that shows it
	What     string   // the fact, e.g. `"Load weight end" without dtype=`
	Releases []string // the profiles (by Name) that print it
	Decisive bool     // a version string: it alone picks the release
}

func (e Evidence) String() string {
	return "line " + strconv.Itoa(e.Line) + ": " + e.What + " (" + strings.Join(e.Releases, ", ") + ")"
}

// preference breaks ties between releases the evidence fits equally: the era defaults first
// (a log without markers is 0.5.9), then the rest.
var preference = []string{"0.5.9", "0.4.6", "0.5.2", "0.5.10", "main-2026-07", "0.3.6"}

// DetectRelease picks the release profile whose line formats fit the log best and returns
// the evidence that decided: the facts that fit the chosen release and rule out at least one
// other, most telling first. A check_env or pip version string decides on its own.
func DetectRelease(lines []Line) (Profile, []Evidence) {
	ev := collectEvidence(lines)
	score := map[string]int{}
	for _, e := range ev {
		w := 1
		if e.Decisive {
			w = 1000
		}
		for _, r := range e.Releases {
			score[r] += w
		}
	}
	best := preference[0]
	for _, name := range preference {
		if score[name] > score[best] {
			best = name
		}
	}
	p, err := LookupProfile(best)
	if err != nil {
		panic("sglang: preference names an unknown profile " + best)
	}
	var decided []Evidence
	for _, e := range ev {
		if slices.Contains(e.Releases, best) && len(e.Releases) < len(profiles) {
			decided = append(decided, e)
		}
	}
	slices.SortStableFunc(decided, func(a, b Evidence) int {
		if a.Decisive != b.Decisive {
			if a.Decisive {
				return -1
			}
			return 1
		}
		return len(a.Releases) - len(b.Releases)
	})
	return p, decided
}

var (
	reCheckEnvVersion = regexp.MustCompile(`^sglang: v?(\d+\.\d+\.\d+)`)
	rePipVersion      = regexp.MustCompile(`\bsglang(?:==|:v)(\d+\.\d+\.\d+)`)
)

// releaseOfVersion is the profile of a version's release line: within the version's minor
// series the newest profile not newer than it, else the series' oldest (0.4.1 is the 0.4.6
// line, 0.5.1 the 0.5.2 one, 0.5.11.dev the 0.5.10 one, 0.5.15 and later main-2026-07); a
// series without a profile is treated like the whole list.
func releaseOfVersion(v string) string {
	minor := func(s string) string { return s[:strings.LastIndexByte(s, '.')] }
	var series []Profile
	for _, p := range profiles {
		if minor(p.Version) == minor(v) {
			series = append(series, p)
		}
	}
	if len(series) == 0 {
		series = profiles
	}
	best := series[0].Name
	for _, p := range series {
		if versionLE(p.Version, v) {
			best = p.Name
		}
	}
	return best
}

func versionLE(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return true
}

// releasesWhere lists the profiles (by Name) for which pred holds.
func releasesWhere(pred func(p Profile) bool) []string {
	var out []string
	for _, p := range profiles {
		if pred(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// collectEvidence lists each distinct fact the log shows about its release, at its first line.
func collectEvidence(lines []Line) []Evidence {
	var out []Evidence
	seen := map[string]bool{}
	add := func(l Line, what string, pred func(p Profile) bool) {
		if seen[what] {
			return
		}
		seen[what] = true
		out = append(out, Evidence{Line: l.No, What: what, Releases: releasesWhere(pred)})
	}
	for _, l := range lines {
		raw := strings.TrimSpace(l.Raw)
		for _, re := range []*regexp.Regexp{reCheckEnvVersion, rePipVersion} {
			if g := re.FindStringSubmatch(raw); g != nil && !seen["version "+g[1]] {
				seen["version "+g[1]] = true
				out = append(out, Evidence{Line: l.No, What: "version " + g[1], Releases: []string{releaseOfVersion(g[1])}, Decisive: true})
			}
		}
		lineEvidence(l, add)
	}
	if no, ok := onlyTP0(lines); ok {
		out = append(out, Evidence{Line: no, What: "TP0 the only rank prefix", Releases: releasesWhere(func(p Profile) bool { return p.TPPrefixOnSingleGPU })})
	}
	return out
}

// onlyTP0 reports whether every headed line with a rank prefix says TP0 (releases up to 0.4.6
// print it even with tp=1), and the first such line.
func onlyTP0(lines []Line) (first int, ok bool) {
	for _, l := range lines {
		if l.Event.Time.IsZero() {
			continue
		}
		for _, r := range l.Event.Ranks {
			if r.Name != "TP" || r.N != 0 {
				return 0, false
			}
			if first == 0 {
				first = l.No
			}
		}
	}
	return first, first > 0
}

// lineEvidence adds what one line's format says of its release.
func lineEvidence(l Line, add func(l Line, what string, pred func(p Profile) bool)) {
	e := &l.Event
	has := func(k string) bool { _, ok := e.Fields.Get(k); return ok }
	switch e.Kind {
	case KindPrefill, KindDecode:
		batchEvidence(l, add)
	case KindDistInitEnd:
		if has("elapsed") {
			add(l, `"Init torch distributed ends" with elapsed=`, func(p Profile) bool { return p.DistInitElapsed })
		} else if has("mem_usage") {
			add(l, `"Init torch distributed ends" without elapsed=`, func(p Profile) bool { return !p.DistInitElapsed })
		}
	case KindLoadEnd:
		if !has("type") {
			return
		}
		add(l, `"Load weight end" with`+ternary(has("elapsed"), "", "out")+` elapsed=`, func(p Profile) bool { return p.LoadEndElapsed == has("elapsed") })
		add(l, `"Load weight end" with`+ternary(has("dtype"), "", "out")+` dtype=`, func(p Profile) bool { return p.LoadEndDtype == has("dtype") })
		add(l, `"Load weight end" with`+ternary(has("mem_usage"), "", "out")+` mem usage=`, func(p Profile) bool { return p.LoadEndMemUsage == has("mem_usage") })
	case KindKVDtype:
		add(l, `"Using KV cache dtype" line`, func(p Profile) bool { return p.KVDtypeLine })
	case KindKVAlloc:
		if has("k_size") {
			add(l, `"KV Cache is allocated" with`+ternary(has("dtype"), "", "out")+` dtype:`, func(p Profile) bool { return p.KVAllocDtype == has("dtype") })
			add(l, `"KV Cache is allocated" with`+ternary(has("tokens"), "", "out")+` #tokens:`, func(p Profile) bool { return p.KVAllocTokens == has("tokens") })
		}
	case KindCGBegin:
		if has("graph") {
			add(l, `"Capture target decode CUDA graph begin. backend=..."`, func(p Profile) bool { return p.CGRoleNamed })
		} else if strings.HasPrefix(Render(*e, Profile{}), msgCGBegin) {
			add(l, `"Capture cuda graph begin."`, func(p Profile) bool { return !p.CGRoleNamed })
		}
	case KindCGBatchSizes:
		add(l, `"Capture cuda graph bs [...]" line`, func(p Profile) bool { return p.CGBatchSizesLine })
	case KindCGEnd:
		if len(e.Fields) == 3 && e.Fields[1].Key == "avail_mem" {
			add(l, `capture end with avail mem before mem usage`, func(p Profile) bool { return p.CGEndAvailFirst })
		} else if len(e.Fields) == 3 && e.Fields[1].Key == "mem_usage" {
			add(l, `capture end with mem usage before avail mem`, func(p Profile) bool { return p.CGEndMem && !p.CGEndAvailFirst && !p.CGRoleNamed })
		}
	case KindCGProgress:
		label := CGBarUnlabelled
		switch {
		case has("bs"):
			label = CGBarBSAvailMem
		case has("avail_mem"):
			label = CGBarAvailMem
		}
		add(l, `capture bar `+[]string{`unlabelled`, `"Capturing batches (avail_mem=..."`, `"Capturing batches (bs=..."`}[label], func(p Profile) bool { return p.CGBar == label })
	case KindLimits:
		add(l, `limits line with`+ternary(has("available_gpu_mem"), "", "out")+` available_gpu_mem=`, func(p Profile) bool { return p.LimitsAvailMem == has("available_gpu_mem") })
	case KindWatchdog:
		add(l, ternary(has("who"), `"Scheduler watchdog timeout (...)"`, `"Watchdog timeout (...)"`), func(p Profile) bool { return p.WatchdogNamed == has("who") })
	case KindSigquitChild:
		if strings.Contains(e.Text, "proces.") && !strings.Contains(e.Text, "process.") {
			add(l, `"Received sigquit from a child proces." typo`, func(p Profile) bool { return p.SigquitTypo })
		}
	case KindSubprocessCrash:
		add(l, `SubprocessWatchdog "Subprocess ... crashed"`, func(p Profile) bool { return p.TeardownOnChildCrash })
	case KindRankDead:
		add(l, `"Rank N scheduler is dead."`, func(p Profile) bool { return !p.RankDiedRuntimeErr })
	case KindLaunchWarning:
		add(l, `"sglang serve" UserWarning`, func(p Profile) bool { return p.ServeEntrypointWarn })
	case KindDeprecated:
		add(l, `"Endpoint '/get_...' is deprecated"`, func(p Profile) bool { return p.GetEndpointsDeprecated })
	case KindAccess:
		if path, _ := e.Fields.Get("path"); path == "/model_info" || path == "/server_info" {
			add(l, "access to "+path, func(p Profile) bool { return p.GetEndpointsDeprecated })
		}
	default:
		if strings.Contains(e.Text, "scheduler died during initialization") {
			add(l, `"RuntimeError: Rank N scheduler died during initialization"`, func(p Profile) bool { return p.RankDiedRuntimeErr })
		}
	}
}

// batchEvidence: the separator, trailing comma and field order of Prefill/Decode lines.
func batchEvidence(l Line, add func(l Line, what string, pred func(p Profile) bool)) {
	e := &l.Event
	if e.Text == "" {
		return
	}
	kind := "Prefill"
	fields := func(p Profile) []string { return p.PrefillFields }
	trailing := func(p Profile) bool { return p.PrefillTrailingComma }
	if e.Kind == KindDecode {
		kind = "Decode"
		fields = func(p Profile) []string { return p.DecodeFields }
		trailing = func(p Profile) bool { return p.DecodeTrailingComma }
	}
	sep := e.Text[:1]
	add(l, `"`+kind+` batch`+sep+`"`, func(p Profile) bool { return p.batchSep() == sep })
	tc := len(e.Text) > 1 && strings.Contains(e.Text[1:], ",")
	add(l, kind+" line with"+ternary(tc, "", "out")+` a trailing ", "`, func(p Profile) bool { return trailing(p) == tc })
	got := labels(e.Fields)
	add(l, kind+" fields "+strings.Join(got, ", "), func(p Profile) bool { return sameOrder(fields(p), got) })
}

// sameOrder reports whether the labels a line printed appear in the profile's order (a line
// may leave out labels it has no stat for, and print ones the profile does not know).
func sameOrder(profile, got []string) bool {
	i := 0
	for _, g := range got {
		j := slices.Index(profile, g)
		if j < 0 {
			if g == LabelCacheHitRate || g == LabelPendingToken || g == LabelInputThroughput || g == LabelCUDAGraph {
				return false // labels that mark a release
			}
			continue
		}
		if j < i {
			return false
		}
		i = j
	}
	return true
}

func ternary(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func labels(fs Fields) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		if f.Key != "" && f.Key != "iter" {
			out = append(out, f.Key)
		}
	}
	return out
}

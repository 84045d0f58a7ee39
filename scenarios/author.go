package scenarios

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// AuthorOptions tune Author.
type AuthorOptions struct {
	// Name is the scenario name; "" derives it from Source.
	Name string
	// Source names the captured log (a file name); it is cited in sources.
	Source string
	// Rules redact the log; nil means DefaultRedactRules. An empty non-nil slice redacts nothing.
	Rules []RedactRule
	// Duration is how long a log without any timestamp lasted: its lines are spread evenly
	// over it, in file order. 0 places them DefaultLineSpacing apart.
	Duration time.Duration
}

// Authored is a scenario written from a captured log.
type Authored struct {
	YAML   []byte // the scenario file; Load accepts it (Author checks)
	Log    string // the redacted log, as embedded in timeline.recorded.inline
	Report AuthorReport
}

// AuthorReport is everything Author inferred, and everything it could not read.
type AuthorReport struct {
	Name      string
	Lines     int // physical lines read
	Segments  int // parsed lines (carriage-return redraws and glued bars split)
	Profile   string
	Era       sglang.Era
	Ranks     int // scheduler processes seen in the headers (1 when none)
	Flags     string
	Dropped   []string // server_args values the flags could not carry, with why
	Phases    []PhaseSpan
	Probes    []ProbePattern
	Ending    string // ready, a failure signature, or "log ends" (nothing decisive)
	ExitCode  *int   // the launcher's exit status the log implies
	Expect    Expect
	Unparsed  []LineIssue // lines kept verbatim that the parser could not read
	Notes     []string    // capture artifacts normalised or worth knowing (CRLF, truncation, ...)
	Redaction []RedactCount
}

// LineIssue is one input line Author could not fully read.
type LineIssue struct {
	Line   int // 1-based physical line of the input
	Seg    int // segment within it (carriage-return redraws, glued bars), 0 for the first
	Kind   sglang.Kind
	Reason string
	Text   string // the line (redacted), shortened to 120 bytes
}

func (i LineIssue) String() string {
	at := strconv.Itoa(i.Line)
	if i.Seg > 0 {
		at += "." + strconv.Itoa(i.Seg)
	}
	return fmt.Sprintf("line %s: %s: %s", at, i.Reason, i.Text)
}

// ProbePattern is one client's repeated request to one route, read from access lines: a
// readiness loop, a health checker, a load balancer.
type ProbePattern struct {
	Client   string // the client's address without its port (redacted)
	Method   string
	Route    string
	Count    int
	Interval time.Duration // median gap between consecutive requests (0 for one request)
	Statuses string        // e.g. "503×3 200×12", in order of first appearance
	First    time.Duration // offset of the first request
}

func (p ProbePattern) String() string {
	every := "once"
	if p.Count > 1 {
		every = fmt.Sprintf("x%d every %s", p.Count, p.Interval)
	}
	return fmt.Sprintf("%s %s %s %s from %s (%s)", p.Client, p.Method, p.Route, every, p.First, p.Statuses)
}

// PhaseSpan is one startup phase of a log: from the first line that opens it to the first
// line of the next phase (or the log's last line).
type PhaseSpan struct {
	Name       string
	Start, End time.Duration
}

// D is the phase's length.
func (p PhaseSpan) D() time.Duration { return p.End - p.Start }

// phaseOf names the phase a line of kind k opens, "failure" for a failure signature. Phases
// appear in log order; a phase opens at its first marker only, so per-rank copies and later
// repeats do not reopen it.
func phaseOf(k sglang.Kind) string {
	if st := sglang.StageOf(k); st.InPhase && st.Opens {
		return st.Phase.String()
	}
	if sglang.IsFailure(k) {
		return "failure"
	}
	return ""
}

// KindAt is one log line's kind at its offset in a timeline.
type KindAt struct {
	Kind sglang.Kind
	At   time.Duration
}

// KindsOf lists the OpLog entries of a timeline.
func KindsOf(tl replay.Timeline) []KindAt {
	out := make([]KindAt, 0, len(tl.Entries))
	for _, e := range tl.Entries {
		if e.Op == replay.OpLog {
			out = append(out, KindAt{e.Event.Kind, e.At})
		}
	}
	return out
}

// LogPhases cuts a log into its startup phases (sglang.Phases, then failure), each from its
// first line to the next phase's first line. Lines before the first marker belong to a "preamble" phase.
func LogPhases(lines []KindAt) []PhaseSpan {
	var out []PhaseSpan
	seen := map[string]bool{}
	if len(lines) == 0 {
		return nil
	}
	end := lines[len(lines)-1].At
	for i, l := range lines {
		name := phaseOf(l.Kind)
		if i == 0 && name == "" {
			name = "preamble"
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if n := len(out); n > 0 {
			out[n-1].End = l.At
		}
		out = append(out, PhaseSpan{Name: name, Start: l.At, End: end})
	}
	return out
}

// RenderLog prints a timeline's log lines as the profile's SGLang does, one per line, stamped
// with scenario time as a replay would (stdout and stderr merged, as 2>&1).
func RenderLog(tl replay.Timeline, p sglang.Profile) []byte {
	var b []byte
	for _, e := range tl.Entries {
		if e.Op != replay.OpLog {
			continue
		}
		ev := e.Event
		if !ev.Time.IsZero() {
			ev.Time = tl.Due(e)
		}
		b = append(sglang.AppendRender(b, ev, p), '\n')
	}
	return b
}

// Author reads a captured SGLang log (any variant sglang.Parse handles) and writes a scenario:
// the redacted log as a recorded timeline, with the profile, ranks, launch flags, warmup and
// probe behaviour and the expect block inferred from it. It never drops a line: lines it
// cannot read are kept verbatim and listed in Report.Unparsed (and as comments in the file).
// It fails only when the log is empty or unreadable, or the rules do not compile.
func Author(ctx context.Context, r io.Reader, opts AuthorOptions) (*Authored, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("author: reading the log: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("author: the log is empty: capture the server's output (stdout and stderr) from the launch on")
	}
	rules := opts.Rules
	if rules == nil {
		rules = DefaultRedactRules()
	}
	red, err := NewRedactor(rules)
	if err != nil {
		return nil, fmt.Errorf("author: %w", err)
	}
	orig, err := sglang.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("author: parsing the log (after %d lines): %w", len(orig), err)
	}
	rep := AuthorReport{Segments: len(orig)}
	if len(orig) > 0 {
		rep.Lines = orig[len(orig)-1].No
	}
	rep.Notes = captureNotes(orig)

	// One output line per parsed line: redraws and glued bars land on lines of their own, CRLF
	// becomes LF, and each line is redacted before anything is inferred from it, so the flags
	// and probes in the file say exactly what the embedded log says.
	var logb strings.Builder
	for i, l := range orig {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		logb.WriteString(red.Line(l.Raw))
		logb.WriteByte('\n')
	}
	text := logb.String()
	if !utf8.ValidString(text) { // a YAML scalar holds text: bytes that are not UTF-8 cannot read back
		text = strings.ToValidUTF8(text, "\uFFFD")
		rep.Notes = append(rep.Notes, "bytes that are not valid UTF-8 were replaced with U+FFFD (a YAML file holds text only)")
	}
	rep.Redaction = red.Counts()
	lines, err := sglang.Parse(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("author: re-parsing the redacted log: %w", err)
	}
	if len(lines) != len(orig) {
		return nil, fmt.Errorf("author: redaction changed the line count (%d → %d): a rule's replacement contains a line break or a carriage return; fix the rule", len(orig), len(lines))
	}
	for i := range lines {
		if lines[i].Event.Kind != orig[i].Event.Kind {
			rep.Notes = append(rep.Notes, fmt.Sprintf("line %d: redaction turned a %s line into %s; check the rules", orig[i].No, orig[i].Event.Kind, lines[i].Event.Kind))
		}
	}
	rep.Unparsed = unparsed(orig, lines)

	spacing := untimedSpacing(lines, opts.Duration, &rep)
	tl, err := logTimeline(lines, spacing)
	if err != nil {
		return nil, fmt.Errorf("author: %w", err)
	}
	kinds := KindsOf(tl)
	rep.Phases = LogPhases(kinds)
	rep.Probes = probePatterns(tl)

	prof := sglang.DetectProfile(lines)
	rep.Profile = profileName(prof, lines)
	if p, err := sglang.LookupProfile(rep.Profile); err == nil {
		rep.Era = p.Era
	}
	rep.Ranks = countRanks(lines)
	argv, dropped := inferFlags(lines, &rep)
	argv = servingFlags(lines, argv, &rep)
	rep.Dropped = dropped
	rep.Flags = strings.Join(argv, " ")

	name := opts.Name
	if name == "" {
		name = nameFrom(opts.Source)
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("author: scenario name %q is not an id: use lower-case letters, digits and dashes (--name)", name)
	}
	rep.Name = name
	sum := sha256.Sum256(data)
	d := draft{name: name, source: opts.Source, digest: hex.EncodeToString(sum[:6]), profile: rep.Profile,
		host: inferHost(lines, rep.Ranks, &rep), flags: rep.Flags, log: text, behavior: inferBehavior(tl), spacing: spacing}

	// Ground truth: compile the recorded timeline the way a run will, and read it off.
	probe, err := Load(name+".yaml", d.yaml(&rep, Expect{Tolerance: Duration(time.Second), Verdict: ReadyOK}))
	if err != nil {
		return nil, fmt.Errorf("author: the drafted scenario does not load (a bug in author; the log is fine): %w", err)
	}
	c, err := Compile(probe, 1)
	if err != nil {
		return nil, fmt.Errorf("author: the drafted scenario does not compile: %w", err)
	}
	var ending string
	ending, d.faults = failureEnding(c)
	if d.faults != nil { // compile again: the prediction must see the faults a run will have
		if probe, err = Load(name+".yaml", d.yaml(&rep, Expect{Tolerance: Duration(time.Second), Verdict: ReadyOK})); err == nil {
			c, err = Compile(probe, 1)
		}
		if err != nil {
			return nil, fmt.Errorf("author: the drafted scenario with its faults does not compile (a bug in author): %w", err)
		}
	}
	rep.Expect, rep.Ending = expectFrom(c, ending)
	rep.ExitCode = rep.Expect.ExitCode
	out := d.yaml(&rep, rep.Expect)
	s, err := Load(name+".yaml", out)
	if err != nil {
		return nil, fmt.Errorf("author: the authored scenario does not load (a bug in author): %w", err)
	}
	if s.Timeline.Recorded.Inline != text {
		return nil, errors.New("author: the embedded log does not read back byte-exact from YAML (a bug in author's quoting)")
	}
	return &Authored{YAML: out, Log: text, Report: rep}, nil
}

// captureNotes describes the capture artifacts the parser absorbed.
func captureNotes(lines []sglang.Line) []string {
	var crlf, split, timeOnly, shortDate, backwards int
	wrappers := map[string]int{}
	var last time.Time
	firstBack := 0
	for _, l := range lines {
		if l.CRLF && l.Seg == 0 {
			crlf++
		}
		if l.Seg > 0 {
			split++
		}
		for _, w := range l.Wrappers {
			wrappers[w.Kind.String()]++
		}
		switch l.TimeForm {
		case sglang.TimeOnly:
			timeOnly++
		case sglang.TimeShortDate:
			shortDate++
		}
		if l.TimeForm != sglang.TimeNone {
			if !last.IsZero() && l.Time.Before(last) {
				backwards++
				if firstBack == 0 {
					firstBack = l.No
				}
			}
			last = l.Time
		}
	}
	var notes []string
	if crlf > 0 {
		notes = append(notes, fmt.Sprintf("%d CRLF line endings normalised to LF", crlf))
	}
	if split > 0 {
		notes = append(notes, fmt.Sprintf("%d carriage-return redraws or glued progress bars split onto lines of their own", split))
	}
	if n := len(lines); n > 0 && lines[n-1].Truncated {
		notes = append(notes, fmt.Sprintf("line %d has no newline: the capture may have been cut there", lines[n-1].No))
	}
	for _, k := range slices.Sorted(maps.Keys(wrappers)) {
		notes = append(notes, fmt.Sprintf("%d lines carry a %s wrapper prefix (kept; replay prints SGLang's own lines)", wrappers[k], k))
	}
	if timeOnly > 0 {
		notes = append(notes, fmt.Sprintf("%d time-only headers: the date is taken from context (1970-01-01 when the log has none); replay prints full dates", timeOnly))
	}
	if shortDate > 0 {
		notes = append(notes, fmt.Sprintf("%d MM-DD headers: the year is taken from context", shortDate))
	}
	if backwards > 0 {
		notes = append(notes, fmt.Sprintf("%d headers go back in time (first at line %d): replay keeps file order and holds the clock", backwards, firstBack))
	}
	return notes
}

// unparsed lists the lines the parser kept without understanding them.
func unparsed(orig, lines []sglang.Line) []LineIssue {
	var out []LineIssue
	for i, l := range lines {
		e := l.Event
		reason := ""
		switch {
		case e.Kind == sglang.KindUnknown:
			reason = "unknown line, kept verbatim"
		case (e.Kind == sglang.KindShardProgress || e.Kind == sglang.KindLoadEnd || e.Kind == sglang.KindKVAlloc) && len(e.Fields) == 0:
			reason = "recognised as " + e.Kind.String() + " but its values could not be read"
		case e.Kind == sglang.KindServerArgs:
			if _, err := sglang.SplitRepr(e.Text); err != nil {
				reason = err.Error()
			}
		}
		if reason == "" {
			continue
		}
		t := l.Raw
		if len(t) > 120 {
			t = t[:117] + "..."
		}
		out = append(out, LineIssue{Line: orig[i].No, Seg: orig[i].Seg, Kind: e.Kind, Reason: reason, Text: t})
	}
	return out
}

// profileName picks the catalogue profile for the detected era. Only era C prints server_args
// as a dict, so that form decides the era over DetectProfile's per-line votes (a startup log of
// many ranks repeats era-B-looking lines once per rank).
func profileName(p sglang.Profile, lines []sglang.Line) string {
	for _, l := range lines {
		if l.Event.Kind == sglang.KindServerArgs {
			if strings.HasPrefix(l.Event.Text, "{") {
				p.Era = sglang.EraC
			} else if p.Era == sglang.EraC {
				p.Era = sglang.EraB // ServerArgs(...) is eras A and B
			}
			break
		}
	}
	for _, l := range lines {
		switch l.Event.Kind {
		case sglang.KindLaunchWarning:
			if p.Era == sglang.EraC {
				return "C-late"
			}
		case sglang.KindCGProgress:
			if _, ok := l.Event.Fields.Get("avail_mem"); !ok && p.Era == sglang.EraA {
				return "A-2024"
			}
		}
	}
	return p.Era.String()
}

// countRanks counts the scheduler processes: distinct rank prefixes of headed lines.
func countRanks(lines []sglang.Line) int {
	seen := map[string]bool{}
	for _, l := range lines {
		if l.TimeForm == sglang.TimeNone || len(l.Event.Ranks) == 0 || l.Block > 0 {
			continue
		}
		var b strings.Builder
		for _, r := range l.Event.Ranks {
			b.WriteString(r.String() + " ")
		}
		seen[b.String()] = true
	}
	return max(len(seen), 1)
}

// rankMax is the highest N of a rank name in the headers, -1 when absent.
func rankMax(lines []sglang.Line, name string) int {
	m := -1
	for _, l := range lines {
		for _, r := range l.Event.Ranks {
			if r.Name == name && r.N > m {
				m = r.N
			}
		}
	}
	return m
}

// inferFlags reads the flags from the server_args line; without one it builds them from what
// the log shows (rank prefixes, the uvicorn address) and says so.
func inferFlags(lines []sglang.Line, rep *AuthorReport) ([]string, []string) {
	for _, l := range lines {
		if l.Event.Kind != sglang.KindServerArgs {
			continue
		}
		argv, dropped, err := flagsFromServerArgs(l.Event.Text)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("line %d: server_args: %v", l.No, err))
		}
		if len(argv) > 0 {
			return argv, dropped
		}
		break
	}
	rep.Notes = append(rep.Notes, "no readable server_args line: launch.flags are rebuilt from rank prefixes and the uvicorn line, with a placeholder --model-path; edit them")
	argv := []string{"--model-path", "unknown/model-from-log"}
	for _, p := range [...]struct{ rank, flag string }{{"TP", "--tp-size"}, {"PP", "--pp-size"}, {"DP", "--dp-size"}} {
		if n := rankMax(lines, p.rank); n > 0 {
			argv = append(argv, p.flag, strconv.Itoa(n+1))
		}
	}
	if rankMax(lines, "DP") > 0 {
		argv = append(argv, "--enable-dp-attention") // DP ranks inside one TP group print "DPn TPn"
	}
	for _, l := range lines {
		if l.Event.Kind == sglang.KindUvicornRunning {
			h, _ := l.Event.Fields.Get("host")
			p, _ := l.Event.Fields.Get("port")
			if h != "" && !strings.ContainsAny(h, " \t") {
				argv = append(argv, "--host", h)
			}
			if p != "" {
				argv = append(argv, "--port", p)
			}
			break
		}
	}
	if _, err := sglang.ParseArgs(argv); err != nil {
		return []string{"--model-path", "unknown/model-from-log"}, []string{err.Error()}
	}
	return argv, nil
}

// inferHost writes an inline host block from what the log shows: one GPU per rank, GPU
// memory from the first "Init torch distributed ends" usage plus "Load weight begin" free
// memory, host RAM from a HiCache host-memory error when there is one.
func inferHost(lines []sglang.Line, ranks int, rep *AuthorReport) hostDraft {
	h := hostDraft{GPUCount: ranks}
	var usage, avail float64
	for _, l := range lines {
		switch l.Event.Kind {
		case sglang.KindDistInitEnd:
			if v, ok := l.Event.Fields.Float("mem_usage"); ok && usage == 0 {
				usage = v
			}
		case sglang.KindLoadBegin:
			if v, ok := l.Event.Fields.Float("avail_mem"); ok && avail == 0 {
				avail = v
			}
		case sglang.KindHostMemError:
			if v, ok := l.Event.Fields.Float("free_gb"); ok && h.HostRAMGB == 0 && v > 0 {
				h.HostRAMGB = math.Ceil(v*1e9/(1<<30)) + 10 // the check leaves a 10 GiB reserve
			}
		}
	}
	if avail > 0 {
		h.GPUMemoryGB = math.Ceil((usage + avail) * 1e9 / (1 << 30))
	} else {
		h.GPUMemoryGB = 80
		rep.Notes = append(rep.Notes, "GPU memory is not in the log (no Load weight begin line): host.gpu_memory_gb is a placeholder 80")
	}
	if h.HostRAMGB == 0 {
		h.HostRAMGB = 1024
		rep.Notes = append(rep.Notes, "host RAM is not in the log: host.host_ram_gb is a placeholder 1024")
	}
	return h
}

type hostDraft struct {
	GPUCount    int
	GPUMemoryGB float64
	HostRAMGB   float64
}

// warmupRoutes are the server's own warmup requests, not probes.
var warmupRoutes = map[string]bool{"GET /get_model_info": true, "GET /model_info": true, "POST /generate": true, "POST /freeze_gc": true}

// probePatterns groups access lines by client address and route. The server's own warmup
// requests (before ready) are left out; what remains is the traffic a readiness tool, a
// health checker or users sent.
func probePatterns(tl replay.Timeline) []ProbePattern {
	type group struct {
		p        ProbePattern
		at       []time.Duration
		statuses []string
		count    map[string]int
	}
	var order []string
	groups := map[string]*group{}
	ready := false
	for _, e := range tl.Entries {
		if e.Op != replay.OpLog {
			continue
		}
		ev := e.Event
		if ev.Kind == sglang.KindReady {
			ready = true
		}
		if ev.Kind != sglang.KindAccess {
			continue
		}
		f := ev.Fields
		client, _ := f.Get("client")
		method, _ := f.Get("method")
		route, _ := f.Get("path")
		status, _ := f.Get("status")
		if !ready && warmupRoutes[method+" "+route] {
			continue
		}
		if i := strings.LastIndexByte(client, ':'); i > 0 && !strings.HasSuffix(client, "]") {
			client = client[:i]
		}
		key := client + " " + method + " " + route
		g := groups[key]
		if g == nil {
			g = &group{p: ProbePattern{Client: client, Method: method, Route: route, First: e.At}, count: map[string]int{}}
			groups[key] = g
			order = append(order, key)
		}
		g.at = append(g.at, e.At)
		if g.count[status] == 0 {
			g.statuses = append(g.statuses, status)
		}
		g.count[status]++
	}
	var out []ProbePattern
	for _, k := range order {
		g := groups[k]
		g.p.Count = len(g.at)
		if len(g.at) > 1 {
			gaps := make([]time.Duration, len(g.at)-1)
			for i := range gaps {
				gaps[i] = g.at[i+1] - g.at[i]
			}
			slices.Sort(gaps)
			g.p.Interval = gaps[len(gaps)/2]
		}
		var st []string
		for _, s := range g.statuses {
			st = append(st, fmt.Sprintf("%s×%d", s, g.count[s]))
		}
		g.p.Statuses = strings.Join(st, " ")
		out = append(out, g.p)
	}
	slices.SortStableFunc(out, func(a, b ProbePattern) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// inferBehavior reads the warmup prefill size and the idle probes' prefill size (each
// generating /health check logs a small Prefill line: 1 token, or 64 in incident 2).
func inferBehavior(tl replay.Timeline) Behavior {
	var b Behavior
	bound, ready := false, false
	healthProbes := 0
	tokens := map[string]int{}
	graphs := map[string]int{}
	prefills := 0
	for _, e := range tl.Entries {
		ev := e.Event
		switch ev.Kind {
		case sglang.KindUvicornRunning:
			bound = true
		case sglang.KindReady:
			ready = true
		case sglang.KindAccess:
			if p, _ := ev.Fields.Get("path"); ready && (p == "/health" || p == "/health_generate") {
				healthProbes++
			}
		case sglang.KindPrefill:
			n, _ := ev.Fields.Get(sglang.LabelNewToken)
			switch {
			case bound && !ready && b.WarmupTokens == 0:
				b.WarmupTokens, _ = strconv.Atoi(n)
			case ready:
				prefills++
				tokens[n]++
				g, _ := ev.Fields.Get(sglang.LabelCUDAGraph)
				graphs[g]++
			}
		}
	}
	// Idle probes: as many small prefills as health probes, nothing else generating.
	if healthProbes > 0 && prefills > 0 && prefills <= healthProbes {
		n, _ := strconv.Atoi(mostCommon(tokens))
		b.ProbeTokens = n
		switch mostCommon(graphs) {
		case "True":
			t := true
			b.ProbeCUDAGraph = &t
		case "False":
			f := false
			b.ProbeCUDAGraph = &f
		}
	}
	return b
}

func mostCommon(m map[string]int) string {
	best, n := "", 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}

// signature names a failure by its kind and the message that identifies it.
func signature(tl replay.Timeline, i int) string {
	// The identifying line is the exception at the end of a traceback, when there is one.
	best := tl.Entries[i].Event
	for _, en := range tl.Entries[i:] {
		if en.Op != replay.OpLog {
			continue
		}
		switch en.Event.Kind {
		case sglang.KindException, sglang.KindCUDAOOM, sglang.KindHostMemError, sglang.KindNCCLError, sglang.KindErrno98,
			sglang.KindRankDead, sglang.KindWatchdog, sglang.KindKilled, sglang.KindSubprocessCrash, sglang.KindInitFailed:
			best = en.Event
		default:
			continue
		}
		break
	}
	best.Time = time.Time{}
	msg := sglang.Render(best, sglang.ProfileFor(sglang.EraC))
	if len(msg) > 100 {
		msg = msg[:97] + "..."
	}
	return best.Kind.String() + ": " + msg
}

func nameFrom(source string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(source, `\`, "/")), path.Ext(source))
	base = strings.ToLower(base)
	var b strings.Builder
	dash := false
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	n := strings.Trim(b.String(), "-")
	if n == "" || n == "." {
		return "authored"
	}
	return n
}

type faultDraft struct{ kind, afterLine string }

// draft holds what goes into the file.
type draft struct {
	name, source, digest, profile, flags, log string
	spacing                                   time.Duration // lines of an untimed log (0: the log has timestamps)
	host                                      hostDraft
	behavior                                  Behavior
	faults                                    []faultDraft
}

// yaml writes the scenario by hand, so that the report rides along as comments and the log
// is a literal block a person can read and edit.
func (d draft) yaml(rep *AuthorReport, e Expect) []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	src := d.source
	if src == "" {
		src = "captured log"
	}
	w("# Authored by `incident-replay author` from %s (sha256 %s…).\n", src, d.digest)
	w("# Everything below is inferred from the log; check the summary, host and expect blocks.\n")
	writeReportComments(&b, rep)
	w("name: %s\n", d.name)
	w("summary: %s\n", strconv.Quote(summaryOf(rep)))
	w("sources:\n  - ref: %s\n    note: %s\n", strconv.Quote("captured log: "+src), strconv.Quote("authored from the log, sha256 "+d.digest+"…; redacted with rules "+ruleNames(rep)))
	w("profile: %s\n", strconv.Quote(d.profile))
	w("host:\n  gpu_model: %s\n  gpu_count: %d\n  gpu_memory_gb: %g\n  host_ram_gb: %g\n  compute_capability: \"0.0\"\n",
		strconv.Quote("unknown (inferred from the log)"), d.host.GPUCount, d.host.GPUMemoryGB, d.host.HostRAMGB)
	w("launch:\n  flags: %s\n", strconv.Quote(d.flags))
	w("timeline:\n  recorded:\n")
	if d.spacing > 0 {
		w("    spacing: %s\n", d.spacing)
	}
	w("    inline: %s", blockScalar(d.log, 6))
	if bh := d.behavior; bh.WarmupTokens > 0 || bh.ProbeTokens > 0 || bh.ProbeCUDAGraph != nil {
		w("server:\n")
		if bh.WarmupTokens > 0 {
			w("  warmup_tokens: %d\n", bh.WarmupTokens)
		}
		if bh.ProbeTokens > 0 {
			w("  probe_tokens: %d\n", bh.ProbeTokens)
		}
		if bh.ProbeCUDAGraph != nil {
			w("  probe_cuda_graph: %t\n", *bh.ProbeCUDAGraph)
		}
	}
	if len(d.faults) > 0 {
		w("faults:\n")
		for _, f := range d.faults {
			w("  - kind: %s\n    after_line: %s\n", f.kind, strconv.Quote(f.afterLine))
		}
	}
	w("expect:\n")
	for _, f := range []struct {
		name string
		v    *Duration
	}{{"bound", e.Bound}, {"ready", e.Ready}, {"dead", e.Dead}} {
		if f.v != nil {
			w("  %s: %s\n", f.name, f.v.D())
		}
	}
	w("  tolerance: %s\n", e.Tolerance.D())
	if e.ExitCode != nil {
		w("  exit_code: %d\n", *e.ExitCode)
	}
	w("  verdict: %s\n", e.Verdict)
	return []byte(b.String())
}

func writeReportComments(b *strings.Builder, rep *AuthorReport) {
	w := func(format string, a ...any) { b.WriteString(comment(fmt.Sprintf(format, a...))) }
	w("profile %s (era %s), %d rank(s), %d lines (%d parsed lines)", rep.Profile, rep.Era, rep.Ranks, rep.Lines, rep.Segments)
	if len(rep.Phases) > 0 {
		var ps []string
		for _, p := range rep.Phases {
			ps = append(ps, fmt.Sprintf("%s %s", p.Name, p.D()))
		}
		w("phases: %s", strings.Join(ps, ", "))
	}
	if rep.Ending != "" {
		w("ending: %s", rep.Ending)
	}
	for _, p := range rep.Probes {
		w("probe: %s", p)
	}
	for _, d := range rep.Dropped {
		w("flag not carried: %s", d)
	}
	for _, n := range rep.Notes {
		w("note: %s", n)
	}
	if len(rep.Unparsed) > 0 {
		w("%d line(s) could not be parsed (kept verbatim in the log below):", len(rep.Unparsed))
		for i, u := range rep.Unparsed {
			if i == 50 {
				w("  ... and %d more", len(rep.Unparsed)-50)
				break
			}
			w("  %s", u)
		}
	}
}

var reCommentUnsafe = regexp.MustCompile(`[\x00-\x08\x0a-\x1f\x7f]`)

func comment(s string) string { return "# " + reCommentUnsafe.ReplaceAllString(s, "?") + "\n" }

func ruleNames(rep *AuthorReport) string {
	if len(rep.Redaction) == 0 {
		return "(none)"
	}
	var n []string
	for _, r := range rep.Redaction {
		n = append(n, r.Rule)
	}
	return strings.Join(n, ", ")
}

func summaryOf(rep *AuthorReport) string {
	s := fmt.Sprintf("Authored from a captured log: SGLang era %s, %d rank(s), ending: %s.", rep.Era, rep.Ranks, rep.Ending)
	if rep.Expect.Bound != nil {
		s += fmt.Sprintf(" Port bound at %s.", rep.Expect.Bound.D())
	}
	if rep.Expect.Ready != nil {
		s += fmt.Sprintf(" Ready at %s.", rep.Expect.Ready.D())
	}
	if rep.Expect.Dead != nil {
		s += fmt.Sprintf(" Dead at %s.", rep.Expect.Dead.D())
	}
	return s
}

// quote writes a YAML double-quoted scalar (JSON escapes are valid YAML).

// blockScalar writes s as a literal block indented by indent spaces when that reads back
// exactly, else as one double-quoted scalar. s ends with "\n".
func blockScalar(s string, indent int) string {
	if literalSafe(s) {
		pad := strings.Repeat(" ", indent)
		var b strings.Builder
		b.WriteString("|+\n")
		for l := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
			if l != "" {
				b.WriteString(pad)
			}
			b.WriteString(l)
			b.WriteByte('\n')
		}
		return b.String()
	}
	return strconv.Quote(s) + "\n"
}

// literalSafe: a literal block detects its indentation from the first non-blank line, and
// YAML forbids control characters and treats NEL/LS/PS as line breaks.
func literalSafe(s string) bool {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimLeft(l, " \t") == "" {
			if l != "" {
				return false // blank lines with blanks in them confuse indentation detection
			}
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return false
		}
		break
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffd {
			return false
		}
	}
	return true
}

// KindDiff is one place where a replayed log departs from the captured one.
type KindDiff struct {
	Index     int // 0-based parsed line
	Line      int // physical line of the input (0 past its end)
	Want, Got sglang.Kind
	WantText  string // the input line
	GotText   string // the replayed line
}

func (d KindDiff) String() string {
	show := func(k sglang.Kind, t string) string {
		if len(t) > 100 {
			t = t[:97] + "..."
		}
		if k == sglang.KindUnknown && t == "" {
			return "(nothing)"
		}
		return fmt.Sprintf("%s %q", k, t)
	}
	return fmt.Sprintf("line %d: input %s, replay %s", d.Line, show(d.Want, d.WantText), show(d.Got, d.GotText))
}

// CheckResult is what replaying an authored scenario gave against its input log.
type CheckResult struct {
	Lines         int        // parsed lines of the input
	Replayed      int        // lines the replay printed
	Diffs         []KindDiff // the first differences by kind and order
	Phases        []PhaseSpan
	ReplayPhases  []PhaseSpan
	PhaseMismatch string // "" when names agree and durations are within 1%
}

// OK reports a replay that matches its input.
func (r *CheckResult) OK() bool {
	return len(r.Diffs) == 0 && r.Lines == r.Replayed && r.PhaseMismatch == ""
}

// CheckAuthored replays an authored scenario the way a run prints it (load, compile, render
// the timeline, parse) and compares the result with the input log: the kind of every line, in
// order (up to maxDiffs differences), and the phases with their durations (within 1%).
func CheckAuthored(input, scenarioYAML []byte, file string, maxDiffs int) (*CheckResult, error) {
	s, err := Load(file, scenarioYAML)
	if err != nil {
		return nil, err
	}
	c, err := Compile(s, 1)
	if err != nil {
		return nil, err
	}
	in, err := sglang.Parse(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("check: reading the input log: %w", err)
	}
	out, err := sglang.Parse(bytes.NewReader(RenderLog(c.Timeline, c.Profile)))
	if err != nil {
		return nil, fmt.Errorf("check: reading the replayed log: %w", err)
	}
	res := &CheckResult{Lines: len(in), Replayed: len(out)}
	for i := range max(len(in), len(out)) {
		var d KindDiff
		d.Index = i
		if i < len(in) {
			d.Line, d.Want, d.WantText = in[i].No, in[i].Event.Kind, in[i].Raw
		}
		if i < len(out) {
			d.Got, d.GotText = out[i].Event.Kind, out[i].Raw
		}
		if i < len(in) && i < len(out) && d.Want == d.Got {
			continue
		}
		if len(res.Diffs) < maxDiffs {
			res.Diffs = append(res.Diffs, d)
		}
	}
	var spacing time.Duration
	if r := s.Timeline.Recorded; r != nil {
		spacing = r.Spacing.D()
	}
	tl, err := logTimeline(in, spacing)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	res.Phases = LogPhases(KindsOf(tl))
	res.ReplayPhases = LogPhases(KindsOf(c.Timeline))
	res.PhaseMismatch = phaseMismatch(res.Phases, res.ReplayPhases)
	return res, nil
}

func phaseMismatch(want, got []PhaseSpan) string {
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("replay lacks phase %s", want[i].Name)
		case i >= len(want):
			return fmt.Sprintf("replay has an extra phase %s", got[i].Name)
		case want[i].Name != got[i].Name:
			return fmt.Sprintf("phase %d is %s in the replay, %s in the input", i+1, got[i].Name, want[i].Name)
		}
		if dw, dg := want[i].D(), got[i].D(); math.Abs(float64(dw-dg)) > 0.01*float64(dw) {
			return fmt.Sprintf("phase %s lasts %s in the replay, %s in the input (more than 1%% apart)", want[i].Name, dg, dw)
		}
	}
	return ""
}

// flagsFromServerArgs turns a server_args repr into launch flags: every item incident-replay
// models (sglang.ServerArgs) whose value differs from SGLang's default becomes a flag. Items
// it cannot carry (unmodelled fields, values with spaces, values SGLang's own argument rules
// reject) are returned as dropped, each with the reason, so the caller can report them.
func flagsFromServerArgs(text string) (argv []string, dropped []string, err error) {
	items, err := sglang.SplitRepr(text)
	if len(items) == 0 {
		if err == nil {
			err = fmt.Errorf("server_args has no items")
		}
		return nil, nil, err
	}
	defaults, _ := sglang.SplitRepr(sglang.DefaultServerArgs().Repr(false))
	def := map[string]string{}
	order := make([]string, 0, len(defaults))
	for _, d := range defaults {
		def[d.Key] = d.Value
		order = append(order, d.Key)
	}
	got := map[string]string{}
	unmodelled := 0
	for _, it := range items {
		if _, ok := def[it.Key]; ok {
			got[it.Key] = it.Value
		} else {
			unmodelled++
		}
	}
	if unmodelled > 0 {
		dropped = append(dropped, fmt.Sprintf("%d server_args fields incident-replay does not model (kept in the log line)", unmodelled))
	}
	model, ok := sglang.PyString(got["model_path"])
	if !ok || model == "" {
		return nil, dropped, fmt.Errorf("server_args has no model_path string")
	}
	argv = []string{"--model-path", model}
	for _, key := range order {
		v, ok := got[key]
		if !ok || key == "model_path" || v == def[key] || v == "None" {
			continue
		}
		flag := "--" + strings.ReplaceAll(key, "_", "-")
		var vals []string
		switch {
		case v == "True":
			vals = []string{}
		case v == "False":
			continue // store_true flags default to False; a False that differs is a repr quirk
		case strings.HasPrefix(v, "["):
			for p := range strings.SplitSeq(strings.Trim(v, "[]"), ",") {
				if p = strings.TrimSpace(p); p != "" {
					vals = append(vals, p)
				}
			}
		default:
			if s, ok := sglang.PyString(v); ok {
				v = s
			}
			if num, err := strconv.ParseFloat(v, 64); err == nil && !strings.Contains(def[key], ".") && strings.HasSuffix(v, ".0") {
				v = strconv.FormatFloat(num, 'f', -1, 64) // 8.0 for an int field
			}
			vals = []string{v}
		}
		if slices.ContainsFunc(vals, func(s string) bool { return s == "" || strings.ContainsAny(s, " \t\n") }) {
			dropped = append(dropped, fmt.Sprintf("%s: value %s cannot be written as a flag (launch.flags has no quoting)", flag, v))
			continue
		}
		cand := append(append(slices.Clone(argv), flag), vals...)
		if _, perr := sglang.ParseArgs(cand); perr != nil {
			dropped = append(dropped, fmt.Sprintf("%s %s: %v", flag, strings.Join(vals, " "), perr))
			continue
		}
		argv = cand
	}
	return argv, dropped, err
}

package sglang

import "strings"

// DetectProfile infers the profile of a captured log from era markers (separator of batch
// lines, removed and added fields, era-C-only lines, the TP0 single-GPU prefix) and returns the
// era's default profile adjusted to what the log shows: the Prefill/Decode field order and
// separator of its first batch lines and the optional fields of its startup lines. A log
// without markers gets era C.
func DetectProfile(lines []Line) Profile {
	var score eraScore
	var prefill, decode *Event
	sawRanks, onlyTP0 := false, true
	for i := range lines {
		e := &lines[i].Event
		if !e.Time.IsZero() {
			for _, r := range e.Ranks {
				sawRanks = true
				if r.Name != "TP" || r.N != 0 {
					onlyTP0 = false
				}
			}
		}
		if e.Kind == KindPrefill && prefill == nil {
			prefill = e
		}
		if e.Kind == KindDecode && decode == nil {
			decode = e
		}
		score.vote(e)
	}
	if sawRanks && onlyTP0 {
		score[EraA]++
	}
	era := score.era()
	p := ProfileFor(era)
	p.Name = "detected-" + era.String()
	if sawRanks && onlyTP0 {
		p.TPPrefixOnSingleGPU = true
	}
	if prefill != nil {
		p.PrefillFields = labels(prefill.Fields)
		p.BatchSep = prefill.Text[:1]
	}
	if decode != nil {
		p.DecodeFields = labels(decode.Fields)
		p.DecodeTrailingComma = len(decode.Text) > 1 && strings.Contains(decode.Text[1:], ",")
		if prefill == nil {
			p.BatchSep = decode.Text[:1]
		}
	}
	return p
}

// eraScore counts each era's votes.
type eraScore [EraC + 1]int

// era is the era with the most votes; C wins ties with it, A wins ties with B.
func (score *eraScore) era() Era {
	switch {
	case score[EraA] > score[EraC] && score[EraA] >= score[EraB]:
		return EraA
	case score[EraB] > score[EraC]:
		return EraB
	}
	return EraC
}

// vote adds what one line says of its era.
func (score *eraScore) vote(e *Event) {
	switch e.Kind {
	case KindPrefill, KindDecode:
		if strings.HasPrefix(e.Text, ",") {
			score[EraC] += 3
		} else if _, ok := e.Fields.Get(LabelCacheHitRate); ok {
			score[EraA] += 2
		} else if _, ok := e.Fields.Get(LabelCUDAGraph); !ok && e.Kind == KindDecode {
			score[EraA] += 2
		} else {
			score[EraA]++
			score[EraB]++
		}
		if e.Kind == KindDecode && len(e.Text) > 1 && strings.Contains(e.Text[1:], ",") {
			score[EraB] += 2
		}
	case KindKVAvailable:
		score[EraB]++
	case KindLimits:
		if _, ok := e.Fields.Get("available_gpu_mem"); ok {
			score[EraB]++
		} else {
			score[EraA]++
		}
	case KindStartupTimings, KindFreezeGC, KindDeprecated, KindSubprocessCrash, KindLaunchWarning:
		score[EraC] += 3
	case KindServerArgs:
		if strings.HasPrefix(e.Text, "{") {
			score[EraC] += 3
		} else {
			score[EraA]++
			score[EraB]++
		}
	default:
		score.voteField(e)
	}
}

// voteField votes on the optional fields and wording of single lines.
func (score *eraScore) voteField(e *Event) {
	switch e.Kind {
	case KindAccess:
		if p, _ := e.Fields.Get("path"); p == "/model_info" || p == "/server_info" {
			score[EraC] += 2
		}
	case KindKVAlloc:
		if _, ok := e.Fields.Get("tokens"); !ok {
			score[EraA] += 2
		}
	case KindLoadEnd:
		if _, ok := e.Fields.Get("mem_usage"); !ok {
			score[EraA] += 2
		}
	case KindSigquitChild:
		if strings.Contains(e.Text, "proces.") && !strings.Contains(e.Text, "process.") {
			score[EraA] += 2
		}
	case KindWatchdog:
		if _, ok := e.Fields.Get("who"); ok {
			score[EraB]++
		} else {
			score[EraA]++
		}
	}
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

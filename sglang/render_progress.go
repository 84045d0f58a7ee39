package sglang

import (
	"unicode/utf8"
)

// appendPct pads the percentage to three columns like tqdm's "{:3.0f}%".
func appendPct(dst []byte, pct string) []byte {
	for i := utf8.RuneCountInString(pct); i < 3; i++ {
		dst = append(dst, ' ')
	}
	return append(dst, pct...)
}

// appendTQDMTail writes "done/total [elapsed<remaining, rate]"; rate is kept as printed,
// including tqdm's left padding.
func appendTQDMTail(dst []byte, f Fields) []byte {
	g := func(k string) string { v, _ := f.Get(k); return v }
	dst = append(append(append(dst, g("done")...), '/'), g("total")...)
	dst = append(append(append(dst, " ["...), g("elapsed")...), '<')
	dst = append(append(append(dst, g("remaining")...), ", "...), g("rate")...)
	return append(dst, ']')
}

// appendBatch writes a Prefill/Decode line. Text carries the separator after "batch" ("." or
// ",") followed by whatever trailed the last field (", " on mid-2025 Decode lines); an empty
// Text takes the profile's separator. A field with key "iter" prints as " [N]" after "batch";
// a field with an empty key prints its value alone (a piece that was not "label: value").
func appendBatch(dst []byte, e Event, p Profile) []byte {
	if e.Kind == KindPrefill {
		dst = append(dst, "Prefill batch"...)
	} else {
		dst = append(dst, "Decode batch"...)
	}
	fs := e.Fields
	if len(fs) > 0 && fs[0].Key == "iter" {
		dst = append(append(append(dst, " ["...), fs[0].Value...), ']')
		fs = fs[1:]
	}
	sep, tail := e.Text, ""
	if sep == "" {
		sep = p.batchSep()
	} else {
		sep, tail = e.Text[:1], e.Text[1:]
	}
	dst = append(append(dst, sep...), ' ')
	for i, f := range fs {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		if f.Key != "" {
			dst = append(append(dst, f.Key...), ": "...)
		}
		dst = append(dst, f.Value...)
	}
	return append(dst, tail...)
}

package sglang

import (
	"strconv"
)

// Access is a uvicorn access line; client is "ip:port". The reason phrase follows the status
// as uvicorn prints it.
func Access(client, method, path string, status int) Event {
	return ev(KindAccess, "client", client, "method", method, "path", path, "proto", "HTTP/1.1",
		"status", strconv.Itoa(status), "reason", reasonPhrase(status))
}

func reasonPhrase(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 422:
		return "Unprocessable Entity"
	case 500:
		return "Internal Server Error"
	case 502:
		return "Bad Gateway"
	case 503:
		return "Service Unavailable"
	}
	return ""
}

// Deprecated is era C's warning for a /get_* endpoint.
func Deprecated(oldPath, newPath string) Event {
	return ev(KindDeprecated, "old", oldPath, "new", newPath)
}

// FreezeGC is era C's "Freezing GC in Scheduler process. ..." line; msg is the whole message.
func FreezeGC(msg string) Event { return Event{Kind: KindFreezeGC, Text: msg} }

// Ready is "The server is fired up and ready to roll!".
func Ready() Event { return ev(KindReady) }

// PrefillStats are the values of a Prefill line; the profile picks which are printed.
type PrefillStats struct {
	Iter            int // forward counter (SGLANG_LOG_FORWARD_ITERS); 0 prints none
	NewSeq          int
	NewToken        int
	CachedToken     int
	CacheHitRate    float64 // percent
	TokenUsage      float64
	RunningReq      int
	QueueReq        int
	PendingToken    int
	CUDAGraph       bool
	InputThroughput float64
}

// DecodeStats are the values of a Decode line; the profile picks which are printed.
type DecodeStats struct {
	Iter          int
	RunningReq    int
	Token         int
	TokenUsage    float64
	CUDAGraph     bool
	GenThroughput float64
	QueueReq      int
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Prefill is a "Prefill batch" line with the profile's fields in the profile's order.
func Prefill(p Profile, s PrefillStats) Event {
	sep := p.batchSep()
	if p.PrefillTrailingComma {
		sep += ", "
	}
	return batch(KindPrefill, sep, s.Iter, p.PrefillFields, s.value)
}

// Decode is a "Decode batch" line with the profile's fields in the profile's order.
func Decode(p Profile, s DecodeStats) Event {
	sep := p.batchSep()
	if p.DecodeTrailingComma {
		sep += ", "
	}
	return batch(KindDecode, sep, s.Iter, p.DecodeFields, s.value)
}

// batch builds a Prefill or Decode line: " [iter]" when iter > 0, then each label with the
// value stat gives it; a label the profile lists but no stat feeds is not printed.
func batch(k Kind, sep string, iter int, labels []string, stat func(label string) (string, bool)) Event {
	e := Event{Kind: k, Text: sep, Fields: make(Fields, 0, len(labels)+1)}
	if iter > 0 {
		e.Fields = append(e.Fields, Field{"iter", strconv.Itoa(iter)})
	}
	for _, l := range labels {
		if v, ok := stat(l); ok {
			e.Fields = append(e.Fields, Field{l, v})
		}
	}
	return e
}

// value is the printed value of one Prefill label.
func (s PrefillStats) value(l string) (string, bool) {
	switch l {
	case LabelNewSeq:
		return strconv.Itoa(s.NewSeq), true
	case LabelNewToken:
		return strconv.Itoa(s.NewToken), true
	case LabelCachedToken:
		return strconv.Itoa(s.CachedToken), true
	case LabelCacheHitRate:
		return gb(s.CacheHitRate) + "%", true
	case LabelTokenUsage:
		return gb(s.TokenUsage), true
	case LabelRunningReq:
		return strconv.Itoa(s.RunningReq), true
	case LabelQueueReq:
		return strconv.Itoa(s.QueueReq), true
	case LabelPendingToken:
		return strconv.Itoa(s.PendingToken), true
	case LabelCUDAGraph:
		return pyBool(s.CUDAGraph), true
	case LabelInputThroughput:
		return gb(s.InputThroughput), true
	}
	return "", false
}

// value is the printed value of one Decode label.
func (s DecodeStats) value(l string) (string, bool) {
	switch l {
	case LabelRunningReq:
		return strconv.Itoa(s.RunningReq), true
	case LabelToken:
		return strconv.Itoa(s.Token), true
	case LabelTokenUsage:
		return gb(s.TokenUsage), true
	case LabelCUDAGraph:
		return pyBool(s.CUDAGraph), true
	case LabelGenThroughput:
		return gb(s.GenThroughput), true
	case LabelQueueReq:
		return strconv.Itoa(s.QueueReq), true
	}
	return "", false
}

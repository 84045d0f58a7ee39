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
	e := Event{Kind: KindPrefill, Text: p.batchSep(), Fields: make(Fields, 0, len(p.PrefillFields)+1)}
	if s.Iter > 0 {
		e.Fields = append(e.Fields, Field{"iter", strconv.Itoa(s.Iter)})
	}
	for _, l := range p.PrefillFields {
		var v string
		switch l {
		case LabelNewSeq:
			v = strconv.Itoa(s.NewSeq)
		case LabelNewToken:
			v = strconv.Itoa(s.NewToken)
		case LabelCachedToken:
			v = strconv.Itoa(s.CachedToken)
		case LabelCacheHitRate:
			v = gb(s.CacheHitRate) + "%"
		case LabelTokenUsage:
			v = gb(s.TokenUsage)
		case LabelRunningReq:
			v = strconv.Itoa(s.RunningReq)
		case LabelQueueReq:
			v = strconv.Itoa(s.QueueReq)
		case LabelPendingToken:
			v = strconv.Itoa(s.PendingToken)
		case LabelCUDAGraph:
			v = pyBool(s.CUDAGraph)
		case LabelInputThroughput:
			v = gb(s.InputThroughput)
		default:
			continue // a label the profile lists but no stat feeds: not printed
		}
		e.Fields = append(e.Fields, Field{l, v})
	}
	return e
}

// Decode is a "Decode batch" line with the profile's fields in the profile's order.
func Decode(p Profile, s DecodeStats) Event {
	e := Event{Kind: KindDecode, Text: p.batchSep(), Fields: make(Fields, 0, len(p.DecodeFields)+1)}
	if p.DecodeTrailingComma {
		e.Text += ", "
	}
	if s.Iter > 0 {
		e.Fields = append(e.Fields, Field{"iter", strconv.Itoa(s.Iter)})
	}
	for _, l := range p.DecodeFields {
		var v string
		switch l {
		case LabelRunningReq:
			v = strconv.Itoa(s.RunningReq)
		case LabelToken:
			v = strconv.Itoa(s.Token)
		case LabelTokenUsage:
			v = gb(s.TokenUsage)
		case LabelCUDAGraph:
			v = pyBool(s.CUDAGraph)
		case LabelGenThroughput:
			v = gb(s.GenThroughput)
		case LabelQueueReq:
			v = strconv.Itoa(s.QueueReq)
		default:
			continue
		}
		e.Fields = append(e.Fields, Field{l, v})
	}
	return e
}

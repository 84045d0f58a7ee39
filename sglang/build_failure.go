package sglang

import (
	"fmt"
	"strconv"
	"time"
)

// HealthFailed is "Health check failed. Server couldn't get a response from detokenizer for last
// N seconds. tic start time: HH:MM:SS. last_heartbeat time: HH:MM:SS".
func HealthFailed(seconds int, tic, lastHeartbeat time.Time) Event {
	return ev(KindHealthFailed, "seconds", strconv.Itoa(seconds), "tic", tic.Format("15:04:05"),
		"last_heartbeat", lastHeartbeat.Format("15:04:05"))
}

// SchedulerException is the headed "Scheduler hit an exception: Traceback (most recent call
// last):" line that opens a scheduler traceback.
func SchedulerException() Event { return Event{Kind: KindSchedulerExc, Text: msgTBStart} }

// TracebackStart is a bare "Traceback (most recent call last):" line.
func TracebackStart() Event { return ev(KindTracebackStart) }

// TracebackFrame is the two lines of one frame: `  File "path", line N, in fn` and the code.
func TracebackFrame(path string, line int, fn, code string) []Event {
	out := []Event{{Kind: KindTraceback, Text: fmt.Sprintf("  File %q, line %d, in %s", path, line, fn)}}
	if code != "" {
		out = append(out, Event{Kind: KindTraceback, Text: "    " + code})
	}
	return out
}

// TracebackText is any other traceback body line, kept verbatim (carets, chained-exception
// banners, the CUDA-graph "Possible solutions:" block).
func TracebackText(s string) Event { return Event{Kind: KindTraceback, Text: s} }

// Exception is the "Type: message" line that ends a traceback.
func Exception(exc, msg string) Event {
	return Event{Kind: KindException, Fields: Fields{{"exc", exc}}, Text: msg}
}

// SigquitChild is the launcher's "Received sigquit from a child process. ..." line, with the old
// typo where the profile has it.
func SigquitChild(p Profile) Event {
	e := ev(KindSigquitChild)
	if p.SigquitTypo {
		e.Text = msgSigquitTypo
	}
	return e
}

// SigquitReceived is the running-phase handler's "SIGQUIT received. signum=..., frame=.... It
// usually means one child failed."
func SigquitReceived(signum int, frame string) Event {
	return Event{Kind: KindSigquitReceived, Text: fmt.Sprintf("SIGQUIT received. signum=%d, frame=%s. It usually means one child failed.", signum, frame)}
}

// SubprocessCrash is era C's SubprocessWatchdog line.
func SubprocessCrash(name string, pid, code int) Event {
	return ev(KindSubprocessCrash, "name", name, "pid", strconv.Itoa(pid), "code", strconv.Itoa(code))
}

// RankDead is "Rank N scheduler is dead. Please check if there are relevant logs.".
func RankDead(rank int) Event { return ev(KindRankDead, "rank", strconv.Itoa(rank)) }

// ExitCode is "Exit code: N" (negative for a signal, e.g. -9).
func ExitCode(code int) Event { return ev(KindExitCode, "code", strconv.Itoa(code)) }

// RankDiedInit is the 2026 launcher's final RuntimeError for a scheduler that died during
// initialization.
func RankDiedInit(rank, code int) Event {
	return Exception("RuntimeError", fmt.Sprintf("Rank %d scheduler died during initialization (exit code: %d). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", rank, code))
}

// Watchdog is the scheduler watchdog line in the profile's wording.
func Watchdog(p Profile, timeout time.Duration) Event {
	t := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	if p.WatchdogNamed {
		return ev(KindWatchdog, "who", "Scheduler", "timeout", t, "soft", "False")
	}
	return ev(KindWatchdog, "timeout", t)
}

// CUDAOOM is torch's OOM exception line. exc is the exception type as printed
// ("torch.OutOfMemoryError", or "Exception" with "Capture cuda graph failed: " in capture).
func CUDAOOM(exc, prefix string, allocMiB float64, gpu int, totalGiB, freeMiB float64) Event {
	amount := gb(allocMiB)
	text := fmt.Sprintf("%s: %s%s%s MiB. GPU %d has a total capacity of %s GiB of which %s MiB is free.",
		exc, prefix, msgCUDAOOM, amount, gpu, gb(totalGiB), gb(freeMiB))
	return Event{Kind: KindCUDAOOM, Fields: Fields{{"amount", amount}, {"unit", "MiB"}}, Text: text}
}

// InitFailed is "Initialization failed. warmup error: ..."; detail is what follows
// "Initialization failed. ".
func InitFailed(detail string) Event { return Event{Kind: KindInitFailed, Text: detail} }

// Errno98 is uvicorn's bind failure on the HTTP port.
func Errno98(host string, port int) Event {
	return ev(KindErrno98, "host", host, "port", strconv.Itoa(port))
}

// NCCLError is "RuntimeError: NCCL error: <detail>".
func NCCLError(detail string) Event {
	return Event{Kind: KindNCCLError, Fields: Fields{{"exc", "RuntimeError"}}, Text: detail}
}

// Killed is the shell's "Killed" after the launcher SIGKILLs itself.
func Killed() Event { return ev(KindKilled) }

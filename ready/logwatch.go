package ready

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// maxLine bounds one physical line; longer ones are cut (a server_args repr can be long, but
// nothing that matters for readiness is past 64 KiB).
const maxLine = 64 << 10

// LineReader splits a stream into physical lines on '\n' and on '\r' (tqdm redraws a progress
// bar with '\r', and each redraw is a progress step). It reads incrementally: each call
// consumes only what it returns, never re-reading earlier output. Empty lines are skipped;
// a line longer than 64 KiB is returned in 64 KiB pieces.
type LineReader struct{ sc *bufio.Scanner }

// NewLineReader wraps r.
func NewLineReader(r io.Reader) *LineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	sc.Split(splitLines)
	return &LineReader{sc: sc}
}

func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	{
		if len(data) == 0 {
			return 0, nil, nil
		}
		i := bytes.IndexAny(data, "\r\n")
		switch {
		case i == 0:
			// Skip terminators; ask for more if nothing else is buffered.
			j := 0
			for j < len(data) && (data[j] == '\r' || data[j] == '\n') {
				j++
			}
			if j == len(data) {
				return j, nil, nil
			}
			adv, tok, err := splitLines(data[j:], atEOF)
			if tok == nil && adv == 0 {
				return j, nil, err
			}
			return j + adv, tok, err
		case i > 0:
			return i + 1, data[:i], nil
		case atEOF:
			return len(data), data, nil
		case len(data) >= maxLine:
			return maxLine, data[:maxLine], nil
		}
	}
	return 0, nil, nil
}

// Next returns the next non-empty line without its terminator, or io.EOF at the end.
func (lr *LineReader) Next() (string, error) {
	if lr.sc.Scan() {
		return lr.sc.Text(), nil
	}
	if err := lr.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

// FollowFile returns a reader that follows path like `tail -F`: it starts at offset 0, waits for
// the file to appear, returns new bytes as they are appended, starts over if the file is
// truncated, and ends with io.EOF once ctx is done. At the end of the file it waits for an
// inotify event on the file's directory, looking again every poll only where inotify is not
// to be had (and once a minute regardless): a reader that sleeps until the writer writes
// costs nothing, and on a virtual clock it is no stream of tiny waits. The reader is a Syncer.
func FollowFile(ctx context.Context, path string, poll time.Duration) io.ReadCloser {
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	return &follower{ctx: ctx, path: path, poll: poll, kick: make(chan struct{}, 1)}
}

// FollowFilePolling is FollowFile without the inotify watch: it looks again every poll at the
// end of the file. For a reader in a process that hosts hundreds of writers in one directory
// (the harness), where every reader would be woken by every writer.
func FollowFilePolling(ctx context.Context, path string, poll time.Duration) io.ReadCloser {
	f := FollowFile(ctx, path, poll).(*follower)
	f.tried = true
	return f
}

// A Syncer is a log source that can say when everything written to it so far has been read.
// Wait syncs before it lets a healthy probe count while the log has not shown the server
// ready: the log may say the warmup is still running (era A answers /health 200 throughout),
// and a reader that polls would otherwise lose that race to a fast probe.
type Syncer interface {
	// Sync returns a channel that is closed once a Read has reached the end of what the
	// source held when Sync was called.
	Sync() <-chan struct{}
}

type follower struct {
	ctx  context.Context
	path string
	poll time.Duration
	f    *os.File
	off  atomic.Int64 // bytes of the current file read so far

	kick    chan struct{} // a Sync is waiting: look again without waiting out the poll
	wmu     sync.Mutex    // guards f and watch against Close
	watch   *fsnotify.Watcher
	tried   bool // a watch was attempted (it is nil where inotify failed)
	mu      sync.Mutex
	syncSeq uint64 // Syncs requested so far
	waiters []syncWaiter
}

type syncWaiter struct {
	seq  uint64
	done chan struct{}
}

// Sync implements Syncer.
func (f *follower) Sync() <-chan struct{} {
	f.mu.Lock()
	f.syncSeq++
	w := syncWaiter{seq: f.syncSeq, done: make(chan struct{})}
	f.waiters = append(f.waiters, w)
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
	return w.done
}

// reachedEnd releases the Syncs requested before the read attempt that found the end began.
// The caller asks for more only once it has consumed every line before, so those lines are
// delivered by then.
func (f *follower) reachedEnd(upTo uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.seq <= upTo {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	f.waiters = kept
}

func (f *follower) Read(p []byte) (int, error) {
	for {
		f.mu.Lock()
		seq := f.syncSeq
		f.mu.Unlock()
		if f.f == nil {
			fh, err := os.Open(f.path)
			if err == nil {
				f.wmu.Lock()
				f.f = fh
				f.wmu.Unlock()
				f.off.Store(0)
			} else if !errors.Is(err, os.ErrNotExist) {
				return 0, err
			}
		}
		if f.f != nil {
			n, err := f.f.Read(p)
			f.off.Add(int64(n))
			if n > 0 {
				return n, nil
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, err
			}
			if st, serr := f.f.Stat(); serr == nil && st.Size() < f.off.Load() {
				f.wmu.Lock()
				f.f.Close() // truncated (log rotation with copytruncate): start over
				f.f = nil
				f.wmu.Unlock()
				continue
			}
		}
		f.reachedEnd(seq) // a file that does not exist yet holds nothing either
		var events <-chan fsnotify.Event
		var errs <-chan error
		poll := f.poll
		if w := f.watcher(); w != nil {
			events, errs, poll = w.Events, w.Errors, max(poll, watchedPoll)
		}
		wait := time.NewTimer(poll)
	waiting:
		for {
			select {
			case <-f.ctx.Done():
				wait.Stop()
				f.reachedEnd(^uint64(0))
				return 0, io.EOF
			case <-f.kick:
				break waiting
			case ev, ok := <-events:
				if !ok { // closed: poll from here on
					events, errs = nil, nil
					break waiting
				}
				if filepath.Clean(ev.Name) == filepath.Clean(f.path) {
					break waiting
				}
			case _, ok := <-errs: // an overflowed queue: look again
				if !ok {
					events, errs = nil, nil
				}
				break waiting
			case <-wait.C:
				break waiting
			}
		}
		wait.Stop()
	}
}

// watchedPoll is how often a reader with an inotify watch looks regardless.
const watchedPoll = time.Minute

// watcher watches the file's directory once; nil where inotify cannot (no such directory,
// no inotify instances left): the reader then polls.
func (f *follower) watcher() *fsnotify.Watcher {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if !f.tried {
		f.tried = true
		if w, err := fsnotify.NewWatcher(); err == nil {
			if err := w.Add(filepath.Dir(f.path)); err == nil {
				f.watch = w
			} else {
				_ = w.Close()
			}
		}
	}
	return f.watch
}

// Unread reports whether the file holds bytes the reader has not returned yet (a virtual
// clock waits for them: the line is already in the past of whoever wrote it).
func (f *follower) Unread() bool {
	st, err := os.Stat(f.path)
	if err != nil {
		return false
	}
	return st.Size() > f.off.Load()
}

func (f *follower) Close() error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.tried = true // a Read after Close polls
	if f.watch != nil {
		_ = f.watch.Close()
	}
	if f.f != nil {
		return f.f.Close()
	}
	return nil
}

// idleReader reads r with task t idle: a reader that waits for more of a file is not work
// (the clock waits for unread bytes through the follower instead).
type idleReader struct {
	r io.Reader
	t *vtime.Task
}

func (i idleReader) Read(p []byte) (n int, err error) {
	i.t.Idle(func() { n, err = i.r.Read(p) })
	return n, err
}

// logLine is one typed line on its way from the watcher goroutine to Wait's loop.
type logLine struct {
	ev  sglang.Event
	raw string
}

// watchLog reads r to the end, sending each typed line to out. It never blocks on anything but
// the reader and out, so a quiet log costs nothing.
func watchLog(ctx context.Context, r io.Reader, parser LineParser, out chan<- logLine, to *vtime.Task) error {
	lr := NewLineReader(r)
	for {
		line, err := lr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		for _, ev := range parser.Feed(line) {
			to.Wake()
			select {
			case out <- logLine{ev: ev, raw: line}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

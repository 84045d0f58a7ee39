package vtime

import (
	"bufio"
	"context"
	"os"
	"testing"
	"time"
)

type unreadPipe struct{ f *os.File }

func (p unreadPipe) Idle() (bool, time.Time) { return Unread(p.f) == 0, time.Time{} }

// Each line is stamped with the instant it was read out of the pipe: the clock cannot move
// past a line while it waits unread, nor between its read and its stamp.
func TestStampedReaderStampsTheReadsInstant(t *testing.T) {
	c := New(t0, Options{})
	defer c.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	detach := c.Attach(unreadPipe{pr})
	defer detach()
	sr, err := NewStampedReader(pr, c)
	if err != nil {
		t.Fatal(err)
	}
	type stamped struct {
		line string
		at   time.Duration
	}
	lines := make(chan stamped)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(sr)
		for sc.Scan() {
			lines <- stamped{sc.Text(), sr.At().Sub(t0)}
		}
	}()
	w := NewTask(c)
	defer w.End()
	for i, step := range []time.Duration{0, 5 * time.Second, 90 * time.Second} {
		if err := w.Sleep(context.Background(), step); err != nil {
			t.Fatal(err)
		}
		want := c.Now().Sub(t0)
		c.AfterFunc(time.Second, func() {}) // where the clock goes once nothing holds it
		if _, err := pw.WriteString("line\n"); err != nil {
			t.Fatal(err)
		}
		// The writer goes idle at once; the unread line alone holds the clock.
		var got stamped
		w.Idle(func() { got = <-lines })
		if got.at != want {
			t.Fatalf("line %d stamped at %s, written at %s", i, got.at, want)
		}
	}
	pw.Close()
	if _, ok := <-lines; ok {
		t.Fatal("a line after the writer closed")
	}
}

package fakeserver

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// TestPruneImages builds tiny labelled images under a label of its own (so it can never
// touch another run's images) and prunes keep's checkout's other builds, a gone
// checkout's and an unlabelled one, but not a live checkout's or another host's.
func TestPruneImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		_, err = cli.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		t.Skipf("docker is not available: %v", err)
	}
	defer cli.Close()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	own := map[string]string{LabelRun: "prune-test-" + RunID}
	t.Cleanup(func() { _, _ = pruneImages(context.Background(), "", own) })
	dir := t.TempDir()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	mine, live := host+":"+t.TempDir(), host+":"+t.TempDir()
	gone := host + ":" + filepath.Join(dir, "no-such-checkout")
	build := func(name, tree string) string {
		// Distinct content per image, so each build is its own image id.
		if err := os.WriteFile(filepath.Join(dir, "x"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY x /x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{LabelProject: ProjectName, LabelRun: own[LabelRun]}
		if tree != "" {
			labels[LabelTree] = tree
		}
		var log bytes.Buffer
		ref, err := p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
			Context: dir, Repo: imageRepo + "-prune-test", Tag: name + "-" + RunID, KeepImage: true, BuildLogWriter: &log,
			BuildOptionsModifier: labelImage(labels)}})
		if err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, log.String())
		}
		return ref
	}
	keep, drop, twice := build("keep", mine), build("drop", mine), build("twice", mine)
	theirs, elsewhere := build("theirs", live), build("elsewhere", "other-host:"+filepath.Join(dir, "no-such-checkout"))
	dead, old := build("dead", gone), build("old", "")
	second := imageRepo + "-prune-test:second-" + RunID
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: twice, Target: second}); err != nil {
		t.Fatal(err)
	}

	if _, err := pruneImages(ctx, imageRepo+":no-such-tag", own); err == nil || !strings.Contains(err.Error(), "pass the tag BuildImage returned") {
		t.Fatalf("unknown keep: %v", err)
	}
	n, err := pruneImages(ctx, keep, own)
	if err != nil || n != 4 {
		t.Fatalf("pruned %d (%v), want 4", n, err)
	}
	for _, c := range []struct {
		ref  string
		gone bool
	}{{keep, false}, {drop, true}, {twice, true}, {second, true}, {theirs, false}, {elsewhere, false}, {dead, true}, {old, true}} {
		_, err := cli.ImageInspect(ctx, c.ref)
		if gone := cerrdefs.IsNotFound(err); gone != c.gone || (!gone && err != nil) {
			t.Errorf("%s: inspect err %v, want gone=%v", c.ref, err, c.gone)
		}
	}
	if n, err := pruneImages(ctx, "", own); err != nil || n != 3 {
		t.Fatalf("prune all: %d (%v), want 3", n, err)
	}
}

// WithHostDir refuses what cannot be bind-mounted as a run directory, and opens a good one to
// the container's user.
func TestWithHostDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), file} {
		if err := WithHostDir(bad)(&options{}); err == nil || !strings.Contains(err.Error(), "is not a directory") {
			t.Errorf("WithHostDir(%s) = %v, want a not-a-directory error", bad, err)
		}
	}
	var o options
	if err := WithHostDir(dir)(&o); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 || o.hostDir != dir {
		t.Fatalf("after WithHostDir: mode %v, hostDir %q (err %v); want 0777 and %q", st.Mode().Perm(), o.hostDir, err, dir)
	}
}

func TestDisowned(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	live := t.TempDir()
	gone := filepath.Join(live, "gone")
	mine := host + ":" + live
	for _, c := range []struct {
		name, tree string
		want       bool
	}{
		{"keep's checkout", mine, true},
		{"no checkout label", "", true},
		{"gone checkout here", host + ":" + gone, true},
		{"live checkout here", host + ":" + filepath.Dir(live), false},
		{"checkout on another host", "elsewhere:" + gone, false},
		{"relative path", host + ":gone", false},
		{"no host", gone, false},
	} {
		if got := disowned(c.tree, mine); got != c.want {
			t.Errorf("%s: disowned(%q) = %v, want %v", c.name, c.tree, got, c.want)
		}
	}
}

func TestRetryRemove(t *testing.T) {
	first := errors.New("unable to remove filesystem: directory not empty")
	refused := errors.New("still busy")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name      string
		ctx       context.Context
		failFirst int // calls that fail before one succeeds
		want      error
		calls     int
	}{
		{"second try removes it", context.Background(), 1, nil, 2},
		{"last try removes it", context.Background(), 4, nil, 5},
		{"every try fails", context.Background(), 99, first, 5},
		{"ended context tries none", cancelled, 0, first, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			rm := func(_ context.Context, ids []string) (int, error) {
				calls++
				if len(ids) != 1 || ids[0] != "abc" {
					t.Fatalf("removed %v, want [abc]", ids)
				}
				if calls <= c.failFirst {
					return 0, refused
				}
				return 1, nil
			}
			if err := retryRemove(c.ctx, "abc", first, rm, 5, time.Millisecond); err != c.want {
				t.Fatalf("retryRemove = %v, want %v", err, c.want)
			}
			if calls != c.calls {
				t.Fatalf("%d removals, want %d", calls, c.calls)
			}
		})
	}
}

package fakeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// LabelTree names the checkout an image was built from, as host:path (see PruneImages).
const LabelTree = "org.incident-replay.tree"

// BuildImage builds the static fakesglang binary from repoRoot (CGO_ENABLED=0) and a FROM
// scratch image around it, tagged by the binary's content hash and the checkout, so an
// unchanged binary reuses the image. It returns the tag.
func BuildImage(ctx context.Context, repoRoot string) (string, error) {
	dir, err := os.MkdirTemp("", "fakesglang-image-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "fakesglang")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/fakesglang")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fakesglang (CGO_ENABLED=0) in %s: %v\n%s", repoRoot, err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), dockerfile, 0o644); err != nil {
		return "", err
	}
	f, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	tree, err := treeOf(repoRoot)
	if err != nil {
		return "", err
	}
	// The tree is in the tag: each checkout has images of its own, so pruning one checkout's
	// older builds never takes an image another checkout's run is using.
	sum := sha256.Sum256(slices.Concat(f, dockerfile, []byte(tree)))
	tag := hex.EncodeToString(sum[:])[:16]
	ref := imageRepo + ":" + tag
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return "", fmt.Errorf("docker is not available (%w); container targets need it", err)
	}
	defer cli.Close()
	// Rebuilding an existing tag would leave the previous image dangling (<none>).
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", fmt.Errorf("docker is not available (%w); container targets need it", err)
	}
	defer p.Close()
	var log bytes.Buffer
	ref, err = p.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context: dir, Repo: imageRepo, Tag: tag, KeepImage: true, BuildLogWriter: &log,
		BuildOptionsModifier: labelImage(map[string]string{LabelProject: ProjectName, LabelTree: tree})}})
	if err != nil {
		return "", fmt.Errorf("build image %s: %w\n%s", ref, err, log.String())
	}
	return ref, nil
}

// labelImage sets the image's labels; testcontainers drops ContainerRequest.Labels from a
// build whose image is kept, so they go in through the build options.
func labelImage(labels map[string]string) func(*client.ImageBuildOptions) {
	return func(o *client.ImageBuildOptions) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		maps.Copy(o.Labels, labels)
	}
}

// PruneImages removes the images BuildImage left behind, except keep, a tag or id: keep's
// checkout's other builds, the builds of checkouts on this host whose directory is gone (a
// CI clone), and images from before builds were labelled with their checkout. Another
// checkout's images are left alone: a suite running there may start a container from one
// at any moment. keep "" removes every project image. An image a container still uses is
// left in place and reported. It returns how many it removed.
func PruneImages(ctx context.Context, keep string) (int, error) {
	return pruneImages(ctx, keep, nil)
}

// pruneImages narrows the label filter with extra labels, so tests prune only their own.
func pruneImages(ctx context.Context, keep string, extra map[string]string) (int, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 0, fmt.Errorf("docker is not available (%w); nothing to prune", err)
	}
	defer cli.Close()
	keepID, keepTree := "", ""
	if keep != "" {
		res, err := cli.ImageInspect(ctx, keep)
		if err != nil {
			return 0, fmt.Errorf("image to keep %q: %w; pass the tag BuildImage returned, or \"\" to remove every project image", keep, err)
		}
		keepID = res.ID
		if res.Config != nil {
			keepTree = res.Config.Labels[LabelTree]
		}
	}
	f := make(client.Filters).Add("label", LabelProject+"="+ProjectName)
	for k, v := range extra {
		f = f.Add("label", k+"="+v)
	}
	list, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return 0, fmt.Errorf("list project images: %w", err)
	}
	removed := 0
	var errs []error
	for _, img := range list.Items {
		if img.ID == keepID || (keep != "" && !disowned(img.Labels[LabelTree], keepTree)) {
			continue
		}
		// By tag, one at a time: removing an id with several tags is refused, and the last
		// tag's removal deletes the image and its untagged build parents.
		var refs []string
		for _, t := range img.RepoTags {
			if t != "<none>:<none>" { // how older daemons list a dangling image
				refs = append(refs, t)
			}
		}
		if len(refs) == 0 {
			refs = []string{img.ID}
		}
		ok := true
		for _, ref := range refs {
			if _, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove image %s: %w (stop its containers first, e.g. with fakeserver.Sweep)", ref, err))
				ok = false
				break
			}
		}
		if ok {
			removed++
		}
	}
	return removed, errors.Join(errs...)
}

// treeOf is the checkout at repoRoot as LabelTree names it.
func treeOf(repoRoot string) (string, error) {
	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		return "", fmt.Errorf("source tree %s: %w", repoRoot, err)
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("host name for the image label: %w", err)
	}
	return host + ":" + abs, nil
}

// disowned reports whether an image of tree may go when keep's tree prunes: it is keep's
// tree (an older build), it names no tree (built before trees were labelled), or it is a
// checkout on this host that no longer exists. A checkout on another host (a daemon shared
// over DOCKER_HOST) cannot be checked from here and is kept.
func disowned(tree, keepTree string) bool {
	if tree == "" || tree == keepTree {
		return true
	}
	host, path, ok := strings.Cut(tree, ":")
	if me, err := os.Hostname(); !ok || err != nil || host != me || !filepath.IsAbs(path) {
		return false
	}
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

package fakeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// BuildImage builds the static fakesglang binary from repoRoot (CGO_ENABLED=0) and a FROM
// scratch image around it, tagged by the binary's content hash so an unchanged binary
// reuses the image. It returns the tag.
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
	sum := sha256.Sum256(append(f, dockerfile...))
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
		BuildOptionsModifier: labelImage(map[string]string{LabelProject: ProjectName})}})
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

// PruneImages removes the images BuildImage left behind (everything carrying the project
// label, dangling ones included) except keep, a tag or id; keep "" removes them all. An
// image a container still uses is left in place and reported. It returns how many it
// removed.
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
	keepID := ""
	if keep != "" {
		res, err := cli.ImageInspect(ctx, keep)
		if err != nil {
			return 0, fmt.Errorf("image to keep %q: %w; pass the tag BuildImage returned, or \"\" to remove every project image", keep, err)
		}
		keepID = res.ID
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
		if img.ID == keepID {
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

package fakeserver

import (
	"context"
	_ "embed"
	"errors"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Sweep removes every container carrying the project label (all runs when runID is "",
// else only that run's) and returns how many it removed. Sweeping all runs also removes
// those of runs still in progress (another score --container, another test run): use it
// only to clean up everything; SweepOrphans leaves live runs alone.
func Sweep(ctx context.Context, runID string) (int, error) {
	ids, err := Leftovers(ctx, runID)
	if err != nil {
		return 0, err
	}
	return remove(ctx, ids)
}

// SweepOrphans removes the project's containers whose owner process (LabelOwner) has exited
// on this host, and those without an owner label (started before owners were recorded). It
// returns how many it removed.
func SweepOrphans(ctx context.Context) (int, error) {
	items, err := list(ctx, "")
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, it := range items {
		if owner, ok := it.Labels[LabelOwner]; !ok || ownerGone(owner) {
			ids = append(ids, it.ID)
		}
	}
	return remove(ctx, ids)
}

func remove(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	var errs []error
	for _, id := range ids {
		if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return len(ids) - len(errs), errors.Join(errs...)
}

// Leftovers lists the ids of containers carrying the project label (and runID when set).
func Leftovers(ctx context.Context, runID string) ([]string, error) {
	items, err := list(ctx, runID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids, nil
}

func list(ctx context.Context, runID string) ([]container.Summary, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", LabelProject+"="+ProjectName)
	if runID != "" {
		f = f.Add("label", LabelRun+"="+runID)
	}
	res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}

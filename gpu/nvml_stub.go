//go:build !cgo || !linux

package gpu

import (
	"context"
	"fmt"
)

// Inventory needs cgo and Linux (go-nvml dlopens libnvidia-ml); this build has neither, so it
// always reports ErrNoNVML. Build with CGO_ENABLED=1 on Linux to read GPUs.
func Inventory(ctx context.Context, opts ...Option) (Snapshot, error) {
	return Snapshot{}, fmt.Errorf("%w: this binary was built without cgo", ErrNoNVML)
}

//go:build cgo && linux

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"

	"github.com/incident-replay/incident-replay/gpu"
)

// The GPU-lab spec's cross-check, run on go-nvml's DGX H100 mock so it is known to pass on a
// consistent inventory and to fail on an inconsistent one everywhere, not only on a GPU host.
var _ = Describe("GPU-lab inventory cross-check", Label("inprocess"), func() {
	var snap gpu.Snapshot
	BeforeEach(func(ctx SpecContext) {
		var err error
		snap, err = gpu.InventoryFrom(ctx, dgxh100.New())
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.Devices).To(HaveLen(8))
	})

	It("agrees with NVML's architecture and with nvidia-smi's rows", func() {
		smi := map[int]smiGPU{}
		for i := range 8 {
			smi[i] = smiGPU{name: "NVIDIA H100 80GB HBM3", cc: "9.0", totalMiB: 81920}
		}
		Expect(inventoryDisagreements(snap, smi)).To(BeEmpty())
	})

	It("names each disagreement", func() {
		snap.Devices[1].NVMLArchitecture = gpu.ArchAda
		got := inventoryDisagreements(snap, map[int]smiGPU{3: {name: "NVIDIA H100 80GB HBM3", cc: "8.9", totalMiB: 81920}})
		Expect(got).To(ConsistOf(
			"GPU 1: CC 9.0 names Hopper, NVML says Ada Lovelace",
			"GPU 3: inventory NVIDIA H100 80GB HBM3 9.0 81920 MiB, nvidia-smi NVIDIA H100 80GB HBM3 8.9 81920 MiB",
		))
	})
})

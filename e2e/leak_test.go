package e2e

import (
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The suite end asserts nothing of this run is left; this spec proves that a stopped
// container is really gone at once, not only by the final sweep.
var _ = Describe("container cleanup", Label("container"), func() {
	It("leaves no labelled container after Stop", func(ctx SpecContext) {
		c := runContainer(ctx, fakeserver.WithSpeed(100))
		left, err := fakeserver.Leftovers(ctx, fakeserver.RunID)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(ContainElement(c.GetContainerID()))
		Expect(c.Stop(ctx)).To(Succeed())
		left, err = fakeserver.Leftovers(ctx, fakeserver.RunID)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).NotTo(ContainElement(c.GetContainerID()))
	}, SpecTimeout(time.Minute))
})

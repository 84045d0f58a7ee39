// Package examples_test is a Ginkgo suite to copy into your own project: it replays the
// founding incident (an 11-minute cold start whose /health answers an empty-body 200) against
// a readiness wait function of the kind a team writes, in-process on virtual time and in the
// fakesglang container, and asserts with the matchers package.
package examples_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestExamples(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "incident-replay examples")
}

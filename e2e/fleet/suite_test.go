// Package fleet is the CI-sized fleet bench (make bench-fleet's phases, e2e/internal/fleetbench)
// with 200 simulated clusters (klusterlet/sim) against an in-process hub, so the simulator
// and the hub's behaviour at fleet size do not rot between runs of the full bench.
package fleet

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFleet(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Fleet simulator suite")
}

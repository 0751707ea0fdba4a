package admission

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/core/sarcache"
)

var _ = Describe("flotilla.authorized's cache", func() {
	It("is dropped when RBAC on the hub changes, and the next answer sees the grant", func(ctx SpecContext) {
		admissionCache := map[string]string{"cache": "admission"}
		grant(ctx, clusterNamespace, "rita-works", "rita", workWriter, executeAs(defaultExecutor))
		rita := as("rita")
		doc := work("rita-executed", "ns2", "deployer")
		Eventually(func() error { return createAs(ctx, rita, doc) }).Should(deniedBy("execute_as", "user rita cannot manipulate"))
		misses := counter(sarcache.MissesMetric, admissionCache)
		Expect(misses).To(BeNumerically(">", 0), "SubjectAccessReviews made through the cache")

		invalidated := counter(sarcache.InvalidationsMetric, admissionCache)
		grant(ctx, clusterNamespace, "rita-deployer", "rita", executeAs("system:serviceaccount:ns2:deployer"))
		Eventually(func() float64 { return counter(sarcache.InvalidationsMetric, admissionCache) }).Should(BeNumerically(">", invalidated),
			"the hub's admission cache dropped after the grant")
		Eventually(func() error { return createAs(ctx, rita, doc) }).Should(Succeed())
		Expect(counter(sarcache.MissesMetric, admissionCache)).To(BeNumerically(">", misses), "the answer after the grant was asked again")
	}, SpecTimeout(5*time.Minute))
})

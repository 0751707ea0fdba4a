package placement

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The debug endpoint: concepts "Placement: Troubleshooting, Debug".
var _ = Describe("Placement debug endpoint", func() {
	It("shows the filter and prioritizer results of a placement (concepts: Debug)", func(ctx SpecContext) {
		const ns = "debug"
		namespace(ctx, ns)
		bind(ctx, ns, "debug")
		clusters(ctx, sim{Name: "debug-cluster1", Labels: inSet("debug")}, sim{Name: "debug-cluster2", Labels: inSet("debug")})
		apply(ctx, `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: placement1, namespace: debug}
spec: {}
`)
		Eventually(func() []string { return decided(ctx, ns, "placement1") }).Should(Equal([]string{"debug-cluster1", "debug-cluster2"}))

		By(`kubectl create clusterrole "debugger" --verb=get --non-resource-url="/debug/*"`)
		By(`kubectl create clusterrolebinding debugger --clusterrole=debugger --user=system:anonymous`)
		apply(ctx, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: debugger}
rules:
- nonResourceURLs: ["/debug/*"]
  verbs: [get]
`, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: debugger}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: debugger}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:anonymous}
`)

		By("curl -k https://127.0.0.1:8443/debug/placements/<namespace>/<name>")
		type result struct {
			Filters []struct {
				Name     string   `json:"name"`
				Clusters []string `json:"filteredClusters"`
			} `json:"filteredPiplieResults"`
			Prioritizers []struct {
				Name   string           `json:"name"`
				Weight int32            `json:"weight"`
				Scores map[string]int64 `json:"scores"`
			} `json:"prioritizeResults"`
		}
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // curl -k
		// RBAC answers are cached for a few seconds: a denial before the binding may linger.
		Eventually(func(g Gomega) {
			resp, err := insecure.Get("https://" + debugAddr + "/debug/placements/debug/placement1")
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
			var r result
			g.Expect(json.Unmarshal(body, &r)).To(Succeed())
			both := []string{"debug-cluster1", "debug-cluster2"}
			g.Expect(r.Filters).To(HaveLen(2))
			g.Expect(r.Filters[0].Name).To(Equal("Predicate"))
			g.Expect(r.Filters[0].Clusters).To(Equal(both))
			g.Expect(r.Filters[1].Name).To(Equal("Predicate,TaintToleration"))
			g.Expect(r.Filters[1].Clusters).To(Equal(both))
			g.Expect(r.Prioritizers).To(HaveLen(2))
			full := map[string]int64{"debug-cluster1": 100, "debug-cluster2": 100}
			g.Expect(r.Prioritizers[0].Name).To(Equal("Balance"))
			g.Expect(r.Prioritizers[0].Weight).To(BeEquivalentTo(1))
			g.Expect(r.Prioritizers[0].Scores).To(Equal(full))
			g.Expect(r.Prioritizers[1].Name).To(Equal("Steady"))
			g.Expect(r.Prioritizers[1].Weight).To(BeEquivalentTo(1))
			g.Expect(r.Prioritizers[1].Scores).To(Equal(full))
		}).Should(Succeed())
	}, SpecTimeout(5*time.Minute))
})

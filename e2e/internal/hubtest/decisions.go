package hubtest

import (
	"context"
	"sort"
	"strconv"

	. "github.com/onsi/ginkgo/v2" //nolint:staticcheck // a Ginkgo helper package
	. "github.com/onsi/gomega"    //nolint:staticcheck // a Ginkgo helper package
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// DecisionGroups returns the clusters the placement namespace/placement decided, by decision
// group index (its PlacementDecisions' label), each group sorted.
func DecisionGroups(ctx context.Context, c client.Reader, namespace, placement string) map[int][]string {
	GinkgoHelper()
	list := &clusterv1beta1.PlacementDecisionList{}
	Expect(c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{clusterv1beta1.PlacementLabel: placement})).To(Succeed())
	out := map[int][]string{}
	for _, d := range list.Items {
		idx, err := strconv.Atoi(d.Labels[clusterv1beta1.DecisionGroupIndexLabel])
		Expect(err).NotTo(HaveOccurred(), "PlacementDecision %s/%s label %s", d.Namespace, d.Name, clusterv1beta1.DecisionGroupIndexLabel)
		for _, cd := range d.Status.Decisions {
			out[idx] = append(out[idx], cd.ClusterName)
		}
	}
	for _, g := range out {
		sort.Strings(g)
	}
	return out
}

package webhook_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/managedcluster"
)

// specDefaults is the defaults handler limited to this spec's clusters (a label), so that the
// other specs' clusters get no finalizer nobody would remove.
type specDefaults struct{ *managedcluster.Defaults }

const defaultsSpecLabel = "webhook-spec.flotilla.dev/defaults"

func (d specDefaults) Registration() webhook.Registration {
	r := d.Defaults.Registration()
	r.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{defaultsSpecLabel: "true"}}
	return r
}

var _ = Describe("ManagedCluster defaults at create", Ordered, func() {
	const configuration = "flotilla-defaults-spec"
	var c client.Client

	cluster := func(name string, labels map[string]string, taints ...clusterv1.Taint) *clusterv1.ManagedCluster {
		l := map[string]string{defaultsSpecLabel: "true"}
		for k, v := range labels {
			l[k] = v
		}
		return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
			Spec: clusterv1.ManagedClusterSpec{Taints: taints}}
	}
	created := func(ctx context.Context, mc *clusterv1.ManagedCluster, dryRun bool) *clusterv1.ManagedCluster {
		GinkgoHelper()
		var opts []client.CreateOption
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		Expect(c.Create(ctx, mc, opts...)).To(Succeed())
		return mc
	}

	BeforeAll(func(ctx SpecContext) {
		scheme := runtime.NewScheme()
		Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
		var err error
		c, err = client.New(hubConf, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		srv := start(webhook.Options{ConfigurationName: configuration}, specDefaults{managedcluster.NewDefaults()})
		cleanup(srv)
		Eventually(func(ctx context.Context) []string {
			return created(ctx, cluster(fmt.Sprintf("defaults-probe-%d", GinkgoRandomSeed()), nil), true).Finalizers
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(ContainElement(clusterv1.ManagedClusterFinalizer),
			"waiting for the API server to call the defaults webhook through MutatingWebhookConfiguration %s", configuration)
	})

	It("gives a new cluster its finalizer and the unreachable taint, with timeAdded on every taint", func(ctx SpecContext) {
		before := time.Now().Add(-time.Second)
		forged := metav1.NewTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
		mc := created(ctx, cluster("defaults-plain", map[string]string{"env": "dev"},
			clusterv1.Taint{Key: "example.com/maintenance", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: forged}), false)
		Expect(mc.Finalizers).To(Equal([]string{clusterv1.ManagedClusterFinalizer}))
		// The set label is the controller's: the creator would need "join" on the default set.
		Expect(mc.Labels).NotTo(HaveKey(clusterv1beta2.ClusterSetLabel))
		Expect(mc.Labels).To(HaveKeyWithValue("env", "dev"))
		Expect(mc.Spec.Taints).To(HaveLen(2))
		Expect(mc.Spec.Taints[0].Key).To(Equal("example.com/maintenance"))
		Expect(mc.Spec.Taints[1].Key).To(Equal(clusterv1.ManagedClusterTaintUnreachable))
		Expect(mc.Spec.Taints[1].Effect).To(Equal(clusterv1.TaintEffectNoSelect))
		for _, t := range mc.Spec.Taints {
			Expect(t.TimeAdded.Time).To(BeTemporally(">=", before), "taint %s: a create's timeAdded is the creation time (OCM)", t.Key)
		}
	})

	It("keeps the creator's cluster set and finalizers", func(ctx SpecContext) {
		mc := cluster("defaults-own-set", map[string]string{clusterv1beta2.ClusterSetLabel: "edge"})
		mc.Finalizers = []string{"example.com/keep"}
		mc = created(ctx, mc, false)
		Expect(mc.Labels).To(HaveKeyWithValue(clusterv1beta2.ClusterSetLabel, "edge"))
		Expect(mc.Finalizers).To(Equal([]string{"example.com/keep", clusterv1.ManagedClusterFinalizer}))
	})
})

package hosted_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// OCM's Hosted layout: on the management cluster a registration agent without its work agent
// and a work-only agent, each reaching the managed cluster through its own kubeconfig Secret
// (external-managed-kubeconfig-registration and -work, which the klusterlet operator writes).
var _ = Describe("a hosted work-only agent with its managed kubeconfig in a Secret", Ordered, func() {
	const cluster3, agentNS3 = "hosted3", "klusterlet-hosted3"
	regSecret, workSecret := operatorv1.ExternalManagedKubeConfigRegistrationSecret, operatorv1.ExternalManagedKubeConfigWorkSecret
	var workAgent *klusterlet.Agent

	// start runs an agent until the container ends.
	start := func(opts klusterlet.Options) *klusterlet.Agent {
		GinkgoHelper()
		a, err := klusterlet.New(opts)
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(suiteCtx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(a.Run(runCtx)).To(Succeed())
		}()
		DeferCleanup(func(ctx SpecContext) {
			stop()
			Eventually(ctx, done).Should(BeClosed(), "the agent stops")
		}, NodeTimeout(time.Minute))
		return a
	}
	// applied reports whether work name was applied on the managed cluster: its ConfigMap and
	// its AppliedManifestWork are there.
	applied := func(ctx context.Context, name string) func(Gomega) bool {
		return func(g Gomega) bool {
			return exists(ctx, managedClient, &corev1.ConfigMap{}, "default", name)(g) && slices.Contains(appliedWorks(ctx)(g), name)
		}
	}

	BeforeAll(func(ctx SpecContext) {
		ensureNamespace(ctx, managementClient, agentNS3)
		putSecretIn(ctx, agentNS3, regSecret, map[string][]byte{registration.KubeconfigKey: managedUserKubeconfig(ctx, "hosted3-registration")})
		common := registration.Config{ClusterName: cluster3, AgentNamespace: agentNS3, ManagementConfig: management.Config,
			LeaseDurationSeconds: 2, RetryInitial: 200 * time.Millisecond, RetryMax: 2 * time.Second}
		reg := common
		reg.BootstrapKubeconfig, reg.ManagedKubeconfigSecret, reg.Logger = bootstrapKubeconfig, regSecret, logger.WithName("registration-"+cluster3)
		start(klusterlet.Options{Registration: reg, Work: klusterlet.WorkOptions{Disabled: true}, AddOn: klusterlet.AddOnOptions{Disabled: true}})
		work := common
		work.ManagedKubeconfigSecret, work.Logger = workSecret, logger.WithName("work-"+cluster3)
		// As the operator renders it: --work-service-account is given, but the Secret's
		// kubeconfig is the identity to act as (the ServiceAccount is not in agentNS3 there).
		workAgent = start(klusterlet.Options{Registration: work, Work: klusterlet.WorkOptions{Only: true, ServiceAccount: agentNS3 + "-work-sa"},
			HealthProbeBindAddress: "127.0.0.1:0"})
	}, NodeTimeout(time.Minute))

	It("waits for its managed kubeconfig secret, naming it, then applies ManifestWorks through it", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster3})
			g.Expect(err).NotTo(HaveOccurred())
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster3}, mc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		}).Should(Succeed(), "the hub accepts %s and its registration agent reports it joined", cluster3)
		Eventually(ctx, exists(ctx, managementClient, &corev1.Secret{}, agentNS3, registration.DefaultHubKubeconfigSecret)).
			Should(BeTrue(), "the hub kubeconfig secret %s/%s on the management cluster", agentNS3, registration.DefaultHubKubeconfigSecret)

		want := fmt.Sprintf("secret %s/%s key kubeconfig on the management cluster: the secret does not exist", agentNS3, workSecret)
		Eventually(ctx, readyz(workAgent)).Should(And(HavePrefix("500 "), ContainSubstring(want)), "the work-only agent's readiness names its missing secret")
		configMapWorkFor(ctx, cluster3, "hosted3-first")
		Consistently(ctx, applied(ctx, "hosted3-first"), "3s").Should(BeFalse(), "no work is applied before the work agent's secret exists")

		putSecretIn(ctx, agentNS3, workSecret, map[string][]byte{registration.KubeconfigKey: managedUserKubeconfig(ctx, "hosted3-work-a")})
		Eventually(ctx, readyz(workAgent)).Should(HavePrefix("200 "), "the work-only agent is ready once %s/%s exists", agentNS3, workSecret)
		Eventually(ctx, applied(ctx, "hosted3-first")).Should(BeTrue(), "work hosted3-first applied on the managed cluster")
		Expect(exists(ctx, managementClient, &corev1.ConfigMap{}, "default", "hosted3-first")(Default)).To(BeFalse(), "nothing applied on the management cluster")
	}, SpecTimeout(3*time.Minute))

	It("keeps working through an unusable secret and starts again with a changed one", func(ctx SpecContext) {
		putSecretIn(ctx, agentNS3, workSecret, map[string][]byte{registration.KubeconfigKey: []byte("not a kubeconfig: [")})
		want := fmt.Sprintf("secret %s/%s key kubeconfig", agentNS3, workSecret)
		Eventually(ctx, readyz(workAgent)).Should(And(HavePrefix("500 "), ContainSubstring(want)), "the work-only agent's readiness names its unusable secret")
		configMapWorkFor(ctx, cluster3, "hosted3-during")
		Eventually(ctx, applied(ctx, "hosted3-during")).Should(BeTrue(), "the running session, on the last usable kubeconfig, applies work hosted3-during")

		putSecretIn(ctx, agentNS3, workSecret, map[string][]byte{registration.KubeconfigKey: managedUserKubeconfig(ctx, "hosted3-work-b")})
		// The old identity loses its rights: a session still on it could apply nothing.
		Expect(managedClient.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hosted-hosted3-work-a"}})).To(Succeed())
		Eventually(ctx, readyz(workAgent)).Should(HavePrefix("200 "), "the work-only agent is ready with the changed secret")
		configMapWorkFor(ctx, cluster3, "hosted3-after")
		Eventually(ctx, applied(ctx, "hosted3-after")).Should(BeTrue(),
			"work hosted3-after applied through the changed secret's identity (hosted3-work-b), the old one having lost its rights")
	}, SpecTimeout(3*time.Minute))
})

package hosted_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon/registration"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

const (
	cluster = "hosted1"
	// agentNS is the agent namespace on the management cluster, named after the Klusterlet
	// as OCM's hosted mode does.
	agentNS       = "klusterlet-hosted1"
	managedSecret = "external-managed-kubeconfig"
	// hostingCluster is what hosted add-ons name in their annotation.
	hostingCluster = "management"
)

// managedUserKubeconfig is a kubeconfig for user on the managed cluster, bound to
// cluster-admin by ClusterRoleBinding "hosted-<user>".
func managedUserKubeconfig(ctx context.Context, user string) []byte {
	GinkgoHelper()
	Expect(managedClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hosted-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
	cfg, err := managed.UserConfig(user)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), user+".kubeconfig")
	Expect(environment.WriteKubeconfig(path, "managed", cfg)).To(Succeed())
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// putSecret creates or replaces Secret agentNS/name on the management cluster with data.
func putSecret(ctx context.Context, name string, data map[string][]byte) {
	GinkgoHelper()
	putSecretIn(ctx, agentNS, name, data)
}

// putSecretIn creates or replaces Secret ns/name on the management cluster with data.
func putSecretIn(ctx context.Context, ns, name string, data map[string][]byte) {
	GinkgoHelper()
	Eventually(ctx, func() error {
		s := &corev1.Secret{}
		err := managementClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
		if apierrors.IsNotFound(err) {
			return managementClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data})
		}
		if err != nil {
			return err
		}
		s.Data = data
		return managementClient.Update(ctx, s)
	}).Should(Succeed(), "writing secret %s/%s on the management cluster", ns, name)
}

func ensureNamespace(ctx context.Context, c client.Client, name string) {
	GinkgoHelper()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// exists reports whether obj's key exists through c (false on NotFound, failing otherwise).
func exists(ctx context.Context, c client.Client, obj client.Object, ns, name string) func(Gomega) bool {
	return func(g Gomega) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return false
		}
		g.Expect(err).NotTo(HaveOccurred())
		return true
	}
}

func managedCluster(ctx context.Context, g Gomega) *clusterv1.ManagedCluster {
	mc := &clusterv1.ManagedCluster{}
	g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster}, mc)).To(Succeed())
	return mc
}

// reportedClaim is claim's value in the ManagedCluster's status ("" when absent).
func reportedClaim(ctx context.Context, claim string) func(Gomega) string {
	return func(g Gomega) string {
		for _, c := range managedCluster(ctx, g).Status.ClusterClaims {
			if c.Name == claim {
				return c.Value
			}
		}
		return ""
	}
}

// configMapWork creates ManifestWork name on the hub applying ConfigMap default/name.
func configMapWork(ctx context.Context, name string) {
	GinkgoHelper()
	configMapWorkFor(ctx, cluster, name)
}

// configMapWorkFor creates ManifestWork name in cluster's namespace on the hub applying
// ConfigMap default/name.
func configMapWorkFor(ctx context.Context, cluster, name string) {
	GinkgoHelper()
	raw, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: map[string]string{"from": "hub"}})
	Expect(err).NotTo(HaveOccurred())
	Expect(hubClient.Create(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}})).To(Succeed())
}

// appliedWorks are the ManifestWork names of the AppliedManifestWorks on the managed cluster.
func appliedWorks(ctx context.Context) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &workv1.AppliedManifestWorkList{}
		g.Expect(managedClient.List(ctx, list)).To(Succeed())
		var names []string
		for _, amw := range list.Items {
			names = append(names, amw.Spec.ManifestWorkName)
		}
		return names
	}
}

// approveAddonCSRs approves the pending CSRs of add-on name on the hub, as its add-on manager
// would.
func approveAddonCSRs(ctx context.Context, g Gomega, name string) {
	csrs, err := hubKube.CertificatesV1().CertificateSigningRequests().List(ctx,
		metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + name})
	g.Expect(err).NotTo(HaveOccurred())
	for _, csr := range csrs.Items {
		if len(csr.Status.Conditions) > 0 {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "HostedSuite", Message: "approved by the test"})
		_, err := hubKube.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, &csr, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}
}

func availableCondition(ctx context.Context, name string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		mca := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, mca)).To(Succeed())
		return meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable)
	}
}

// readyz is the klusterlet's readiness check answer: the HTTP status and body.
func readyz(a *klusterlet.Agent) func(Gomega) string {
	return func(g Gomega) string {
		addr := a.HealthProbeAddr()
		g.Expect(addr).NotTo(BeNil(), "the health endpoint listens")
		resp, err := http.Get("http://" + addr.String() + "/readyz/klusterlet")
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return fmt.Sprintf("%d %s", resp.StatusCode, body)
	}
}

var _ = Describe("a hosted klusterlet", Ordered, func() {
	var agent *klusterlet.Agent
	state := func() registration.State { return agent.Registration.State() }

	BeforeAll(func(ctx SpecContext) {
		ensureNamespace(ctx, managementClient, agentNS)
		putSecret(ctx, registration.DefaultBootstrapKubeconfigSecret, map[string][]byte{registration.KubeconfigKey: bootstrapKubeconfig})
		var err error
		agent, err = klusterlet.New(klusterlet.Options{
			Registration: registration.Config{
				ClusterName: cluster, AgentNamespace: agentNS,
				ManagementConfig: management.Config, ManagedKubeconfigSecret: managedSecret,
				LeaseDurationSeconds: 2, RetryInitial: 200 * time.Millisecond, RetryMax: 2 * time.Second,
				Logger: logger.WithName("klusterlet"),
			},
			LeaderElection:         klusterlet.LeaderElection{Enabled: true, Identity: "hosted-replica"},
			AddOn:                  klusterlet.AddOnOptions{LeaseDurationSeconds: 2},
			HealthProbeBindAddress: "127.0.0.1:0",
		})
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(suiteCtx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(agent.Run(runCtx)).To(Succeed())
		}()
		DeferCleanup(func(ctx SpecContext) {
			stop()
			Eventually(ctx, done).Should(BeClosed(), "the klusterlet stops")
		}, NodeTimeout(time.Minute))
	}, NodeTimeout(time.Minute))

	It("reports a missing managed kubeconfig secret, naming it, until it exists", func(ctx SpecContext) {
		want := fmt.Sprintf("secret %s/%s key kubeconfig on the management cluster: the secret does not exist", agentNS, managedSecret)
		Eventually(ctx, func() string { return state().ManagedKubeconfigError }).Should(ContainSubstring(want))
		Eventually(ctx, readyz(agent)).Should(And(HavePrefix("500 "), ContainSubstring(want)))
		putSecret(ctx, managedSecret, map[string][]byte{registration.KubeconfigKey: managedUserKubeconfig(ctx, "hosted-agent-a")})
		Eventually(ctx, func() registration.State { return state() }).Should(And(
			HaveField("ManagedKubeconfigError", BeEmpty()), HaveField("ManagedKubeconfigLoads", 1)))
	}, SpecTimeout(2*time.Minute))

	It("keeps its namespace, Secrets and leader Lease on the management cluster only", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(meta.IsStatusConditionTrue(managedCluster(ctx, g).Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		}).Should(Succeed(), "the hub accepts %s and the agent reports it joined", cluster)

		Expect(exists(ctx, managementClient, &corev1.Secret{}, agentNS, registration.DefaultHubKubeconfigSecret)(Default)).
			To(BeTrue(), "the hub kubeconfig secret is on the management cluster")
		lease := &coordinationv1.Lease{}
		Expect(exists(ctx, managementClient, lease, agentNS, klusterlet.DefaultLeaderElectionName)(Default)).
			To(BeTrue(), "the leader election Lease is on the management cluster")
		Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).To(Equal("hosted-replica"))
		Expect(exists(ctx, managedClient, &corev1.Namespace{}, "", agentNS)(Default)).
			To(BeFalse(), "no agent namespace (so no Secret or Lease) on the managed cluster")
	}, SpecTimeout(3*time.Minute))

	It("reports the managed cluster, not the management one, and renews the hub lease", func(ctx SpecContext) {
		managedSystem, err := managedKube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, reportedClaim(ctx, clusterv1alpha1.ClusterClaimID)).Should(Equal(string(managedSystem.UID)),
			"claim id.k8s.io is the managed cluster's kube-system UID")
		Eventually(ctx, func(g Gomega) []clusterv1.ClientConfig {
			return managedCluster(ctx, g).Spec.ManagedClusterClientConfigs
		}).Should(ConsistOf(HaveField("URL", managed.Config.Host)), "managedClusterClientConfigs name the managed API server")

		Expect(managedClient.Create(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "hosted.example.com"},
			Spec: clusterv1alpha1.ClusterClaimSpec{Value: "on-managed"}})).To(Succeed())
		Eventually(ctx, reportedClaim(ctx, "hosted.example.com")).Should(Equal("on-managed"), "a claim created on the managed cluster reaches the hub")

		renewed := func(g Gomega) time.Time {
			l, err := hubKube.CoordinationV1().Leases(cluster).Get(ctx, registration.LeaseName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(l.Spec.RenewTime).NotTo(BeNil())
			return l.Spec.RenewTime.Time
		}
		var first time.Time
		Eventually(ctx, func(g Gomega) { first = renewed(g) }).Should(Succeed(), "the hub lease %s/%s exists", cluster, registration.LeaseName)
		Eventually(ctx, renewed).Should(BeTemporally(">", first), "the agent renews the hub lease")
	}, SpecTimeout(3*time.Minute))

	It("applies ManifestWorks on the managed cluster and records them there", func(ctx SpecContext) {
		configMapWork(ctx, "hosted-work")
		Eventually(ctx, exists(ctx, managedClient, &corev1.ConfigMap{}, "default", "hosted-work")).Should(BeTrue(), "the ConfigMap on the managed cluster")
		Eventually(ctx, appliedWorks(ctx)).Should(ContainElement("hosted-work"), "an AppliedManifestWork on the managed cluster")
		Expect(exists(ctx, managementClient, &corev1.ConfigMap{}, "default", "hosted-work")(Default)).To(BeFalse(), "nothing applied on the management cluster")
		Eventually(ctx, exists(ctx, managedClient, &corev1.Namespace{}, "", klusterlet.AddOnNamespace)).Should(BeTrue(), "the add-on namespace on the managed cluster")
	}, SpecTimeout(2*time.Minute))

	It("keeps a hosted add-on's Secret and Lease on the management cluster", func(ctx SpecContext) {
		const name, ns = "hostedaddon", "hosted-addon-agent"
		ensureNamespace(ctx, managementClient, ns)
		ensureNamespace(ctx, managedClient, ns)
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name,
			Annotations: map[string]string{addonv1alpha1.HostingClusterNameAnnotationKey: hostingCluster}},
			Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: ns}}
		Expect(hubClient.Create(ctx, mca)).To(Succeed())
		Eventually(ctx, func() error {
			if err := hubClient.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil {
				return err
			}
			mca.Status.Namespace = ns
			mca.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeLease
			mca.Status.Registrations = hubaddon.Registrations(cluster, name, []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}})
			return hubClient.Status().Update(ctx, mca)
		}).Should(Succeed(), "setting the add-on's registrations")

		secretName := addon.SecretName(name, certificatesv1.KubeAPIServerClientSignerName)
		Eventually(ctx, func(g Gomega) map[string][]byte {
			approveAddonCSRs(ctx, g, name)
			s := &corev1.Secret{}
			g.Expect(managementClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, s)).To(Succeed())
			return s.Data
		}).Should(And(HaveKey(addon.TLSCertKey), HaveKey(addon.KubeconfigKey)), "the add-on's hub kubeconfig on the management cluster")
		Expect(exists(ctx, managedClient, &corev1.Secret{}, ns, secretName)(Default)).To(BeFalse(), "no add-on Secret on the managed cluster")

		want := fmt.Sprintf("The status of %s add-on is unknown. No lease found on hosting cluster %q; verify it matches the cluster "+
			"where this managed cluster's klusterlet actually runs.", name, hostingCluster)
		notFound := And(HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", "ManagedClusterAddOnLeaseNotFound"), HaveField("Message", want))
		Eventually(ctx, availableCondition(ctx, name)).Should(notFound)
		// A Lease on the managed cluster is not the hosted add-on's.
		now := metav1.NewMicroTime(time.Now())
		Expect(managedClient.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1.LeaseSpec{RenewTime: &now}})).To(Succeed())
		Consistently(ctx, availableCondition(ctx, name), "3s").Should(notFound)

		Expect(managementClient.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}})).To(Succeed())
		Eventually(ctx, availableCondition(ctx, name)).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated)), "the Lease on the management cluster makes it available")

		Expect(hubClient.Delete(ctx, mca)).To(Succeed())
		Eventually(ctx, exists(ctx, managementClient, &corev1.Secret{}, ns, secretName)).Should(BeFalse(),
			"the disabled add-on's Secret is removed from the management cluster")
	}, SpecTimeout(3*time.Minute))

	It("keeps the Secret and Lease of an add-on running on the managed cluster there", func(ctx SpecContext) {
		const name, ns = "localaddon", "local-addon-agent"
		ensureNamespace(ctx, managementClient, ns)
		ensureNamespace(ctx, managedClient, ns)
		mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name},
			Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: ns}}
		Expect(hubClient.Create(ctx, mca)).To(Succeed())
		Eventually(ctx, func() error {
			if err := hubClient.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil {
				return err
			}
			mca.Status.Namespace = ns
			mca.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeLease
			mca.Status.Registrations = hubaddon.Registrations(cluster, name, []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}})
			return hubClient.Status().Update(ctx, mca)
		}).Should(Succeed(), "setting the add-on's registrations")

		secretName := addon.SecretName(name, certificatesv1.KubeAPIServerClientSignerName)
		Eventually(ctx, func(g Gomega) bool {
			approveAddonCSRs(ctx, g, name)
			return exists(ctx, managedClient, &corev1.Secret{}, ns, secretName)(g)
		}).Should(BeTrue(), "the add-on's hub kubeconfig on the managed cluster")
		Expect(exists(ctx, managementClient, &corev1.Secret{}, ns, secretName)(Default)).To(BeFalse(), "no add-on Secret on the management cluster")

		Expect(managedClient.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}})).To(Succeed())
		Eventually(ctx, availableCondition(ctx, name)).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated)), "the Lease on the managed cluster makes it available")
	}, SpecTimeout(3*time.Minute))

	It("follows a rotated managed kubeconfig secret and keeps working", func(ctx SpecContext) {
		loads := state().ManagedKubeconfigLoads
		putSecret(ctx, managedSecret, map[string][]byte{registration.KubeconfigKey: []byte("not a kubeconfig: [")})
		want := fmt.Sprintf("secret %s/%s key kubeconfig", agentNS, managedSecret)
		Eventually(ctx, func() string { return state().ManagedKubeconfigError }).Should(ContainSubstring(want), "an unparsable kubeconfig is reported")
		Eventually(ctx, readyz(agent)).Should(And(HavePrefix("500 "), ContainSubstring(want)))
		Expect(state().ManagedKubeconfigLoads).To(Equal(loads), "the sessions keep the last usable kubeconfig")

		putSecret(ctx, managedSecret, map[string][]byte{registration.KubeconfigKey: managedUserKubeconfig(ctx, "hosted-agent-b")})
		Eventually(ctx, func() registration.State { return state() }).Should(And(
			HaveField("ManagedKubeconfigError", BeEmpty()), HaveField("ManagedKubeconfigLoads", loads+1)), "the sessions restart with the new kubeconfig")
		Eventually(ctx, readyz(agent)).Should(HavePrefix("200 "))
		// The old identity loses its rights: what follows works through the new one only.
		Expect(managedClient.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hosted-hosted-agent-a"}})).To(Succeed())

		Expect(managedClient.Create(ctx, &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "rotated.example.com"},
			Spec: clusterv1alpha1.ClusterClaimSpec{Value: "after-rotation"}})).To(Succeed())
		Eventually(ctx, reportedClaim(ctx, "rotated.example.com")).Should(Equal("after-rotation"), "a claim created after the rotation reaches the hub")
		configMapWork(ctx, "rotated-work")
		Eventually(ctx, exists(ctx, managedClient, &corev1.ConfigMap{}, "default", "rotated-work")).Should(BeTrue(), "a work created after the rotation is applied")
		Eventually(ctx, appliedWorks(ctx)).Should(ContainElement("rotated-work"))
		Expect(slices.Contains(appliedWorks(ctx)(Default), "hosted-work")).To(BeTrue(), "the earlier work stays applied")
	}, SpecTimeout(3*time.Minute))
})

// The library equivalent of --managed-kubeconfig FILE: both configs given, registration only.
var _ = Describe("a hosted registration agent with a fixed managed config", Ordered, func() {
	const cluster2, agentNS2 = "hosted2", "klusterlet-hosted2"
	var agent *klusterlet.Agent

	BeforeAll(func(ctx SpecContext) {
		var err error
		agent, err = klusterlet.New(klusterlet.Options{
			Registration: registration.Config{
				ClusterName: cluster2, AgentNamespace: agentNS2, BootstrapKubeconfig: bootstrapKubeconfig,
				ManagementConfig: management.Config, ManagedConfig: managed.Config,
				LeaseDurationSeconds: 2, RetryInitial: 200 * time.Millisecond, RetryMax: 2 * time.Second,
				Logger: logger.WithName("klusterlet-" + cluster2),
			},
			LeaderElection: klusterlet.LeaderElection{Enabled: true, Identity: "fixed-replica"},
			Work:           klusterlet.WorkOptions{Disabled: true},
			AddOn:          klusterlet.AddOnOptions{Disabled: true},
		})
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(suiteCtx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(agent.Run(runCtx)).To(Succeed())
		}()
		DeferCleanup(func(ctx SpecContext) {
			stop()
			Eventually(ctx, done).Should(BeClosed(), "the klusterlet stops")
		}, NodeTimeout(time.Minute))
	}, NodeTimeout(time.Minute))

	It("registers with its Secrets and Lease on the management cluster and reports the managed one", func(ctx SpecContext) {
		Eventually(ctx, func(g Gomega) {
			_, err := admin.Accept(ctx, hubClient, hubKube, []string{cluster2})
			g.Expect(err).NotTo(HaveOccurred())
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, mc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
		}).Should(Succeed(), "the hub accepts %s and the agent reports it joined", cluster2)
		Expect(exists(ctx, managementClient, &corev1.Secret{}, agentNS2, registration.DefaultHubKubeconfigSecret)(Default)).
			To(BeTrue(), "the hub kubeconfig secret is on the management cluster")
		Expect(exists(ctx, managementClient, &coordinationv1.Lease{}, agentNS2, klusterlet.DefaultLeaderElectionName)(Default)).
			To(BeTrue(), "the leader election Lease is on the management cluster")
		Expect(exists(ctx, managedClient, &corev1.Namespace{}, "", agentNS2)(Default)).To(BeFalse(), "no agent namespace on the managed cluster")

		managedSystem, err := managedKube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(ctx, func(g Gomega) map[string]string {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Name: cluster2}, mc)).To(Succeed())
			claims := map[string]string{}
			for _, c := range mc.Status.ClusterClaims {
				claims[c.Name] = c.Value
			}
			return claims
		}).Should(HaveKeyWithValue(clusterv1alpha1.ClusterClaimID, string(managedSystem.UID)), "claim id.k8s.io is the managed cluster's kube-system UID")
	}, SpecTimeout(3*time.Minute))
})

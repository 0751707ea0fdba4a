package hosted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	hubaddon "github.com/flotilla-dev/flotilla/hub/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
)

// hostedAddOn is the add-on of the hosted add-on spec; the hosting cluster is the management
// cluster, joined to hub A under its own name as an ordinary (Singleton) cluster.
const (
	hostedAddOn = "hosted-e2e"
	hosting     = "management"
)

// hostedAddOnDeployment is the add-on's agent Deployment, for the hosting cluster, in ns. It
// has no app.kubernetes.io/name label, so runAgents leaves it an object.
func hostedAddOnDeployment(ns string) workv1.Manifest {
	obj := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": hostedAddOn + "-agent", "namespace": ns,
			"annotations": map[string]any{addonv1alpha1.HostedManifestLocationAnnotationKey: addonv1alpha1.HostedManifestLocationHostingValue}},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": hostedAddOn}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": hostedAddOn}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "agent", "image": "example.com/hosted-e2e-agent:v1"}}}}}}
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	var m workv1.Manifest
	m.Raw = raw
	return m
}

// mcaCondition is condition typ of hub A's ManagedClusterAddOn cluster/name (nil while none).
func mcaCondition(ctx context.Context, cluster, name, typ string) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		g.Expect(hubAClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, m)).To(Succeed())
		return meta.FindStatusCondition(m.Status.Conditions, typ)
	}
}

// secretGone says whether Secret ns/name is gone from the management cluster.
func secretGone(ctx context.Context, ns, name string) func() bool {
	return func() bool {
		_, err := mgmtKube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
}

// hostedAddOnSpec joins the management cluster to hub A as cluster hosting, runs a hosted
// add-on of cluster (joined Hosted as Klusterlet kl, whose agent namespace on the management
// cluster is the add-on's install namespace there) with it as the hosting cluster, and removes
// the add-on and the management cluster's own klusterlet again.
func hostedAddOnSpec(ctx SpecContext, cluster, kl string) {
	// The hosting cluster joins hub A as an ordinary cluster (its agent run as a process by the
	// container's BeforeAll; unjoinHosting removes it).
	args := append(joinArgs(ctx, hubA), "--cluster-name", hosting, "--kubeconfig", management.KubeconfigPath, "--wait=false")
	_, err := cli(ctx, args...)
	Expect(err).NotTo(HaveOccurred(), "flotilla %s", strings.Join(args, " "))
	Eventually(ctx, func() []string { return deploymentNames(ctx, mgmtClient, install.AgentNamespace) }).WithTimeout(waitTimeout).
		Should(Equal([]string{"klusterlet-agent"}), "the operator renders the Singleton agent's Deployment in %s on the management cluster", install.AgentNamespace)
	Eventually(ctx, func(g Gomega) {
		_, err := cli(ctx, "accept", "--clusters", hosting, "--kubeconfig", hubA.KubeconfigPath)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(clusterCondition(ctx, hubAClient, hosting, clusterv1.ManagedClusterConditionJoined)(g)).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2*waitTimeout).WithPolling(2*time.Second).Should(Succeed(),
		"flotilla accept --clusters %s on hub A, and ManagedCluster %s Joined", hosting, hosting)
	Eventually(ctx, clusterCondition(ctx, hubAClient, hosting, clusterv1.ManagedClusterConditionAvailable)).WithTimeout(waitTimeout).
		Should(Equal(metav1.ConditionTrue), "ManagedCluster %s on hub A Available", hosting)

	// The add-on: a template whose agent Deployment goes to the hosting cluster, with a hub
	// kubeconfig and Lease health.
	tmpl := &addonv1alpha1.AddOnTemplate{ObjectMeta: metav1.ObjectMeta{Name: hostedAddOn + "-v1"},
		Spec: addonv1alpha1.AddOnTemplateSpec{AddonName: hostedAddOn,
			AgentSpec:    workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{hostedAddOnDeployment(kl)}}},
			Registration: []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient, KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{}}}}}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: hostedAddOn,
		Annotations: map[string]string{hubaddon.HealthCheckAnnotation: "Lease"}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: hubaddon.AddOnTemplateResource,
				DefaultConfig: &addonv1alpha1.ConfigReferent{Name: tmpl.Name}}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
		}}
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: hostedAddOn,
		Annotations: map[string]string{addonv1alpha1.HostingClusterNameAnnotationKey: hosting}},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: kl}}
	for _, o := range []client.Object{tmpl, cma, mca} {
		Expect(hubAClient.Create(ctx, o)).To(Succeed(), "creating %T %s on hub A", o, o.GetName())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubAClient.Delete(ctx, o))).To(Succeed()) }, NodeTimeout(time.Minute))
	}

	hostedWork := fmt.Sprintf("addon-%s-deploy-hosting-%s-0", hostedAddOn, cluster)
	Eventually(ctx, func(g Gomega) {
		w := &workv1.ManifestWork{}
		g.Expect(hubAClient.Get(ctx, client.ObjectKey{Namespace: hosting, Name: hostedWork}, w)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied)).To(BeTrue(), "conditions %v", w.Status.Conditions)
	}).WithTimeout(waitTimeout).Should(Succeed(), "ManifestWork %s/%s on hub A, Applied by the hosting cluster's agent", hosting, hostedWork)
	Eventually(ctx, mcaCondition(ctx, cluster, hostedAddOn, addonv1alpha1.ManagedClusterAddOnHostingManifestApplied)).WithTimeout(waitTimeout).
		Should(HaveField("Status", metav1.ConditionTrue), "ManagedClusterAddOn %s/%s HostingManifestApplied", cluster, hostedAddOn)
	Expect(mcaCondition(ctx, cluster, hostedAddOn, addonv1alpha1.ManagedClusterAddOnHostingClusterValidity)(Default)).
		To(HaveField("Reason", addonv1alpha1.HostingClusterValidityReasonValid))
	_, err = mgmtKube.AppsV1().Deployments(kl).Get(ctx, hostedAddOn+"-agent", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred(), "the add-on's Deployment on the management (hosting) cluster, in %s", kl)
	Expect(workloads(ctx, managed)).To(BeEmpty(), "no Deployment or Pod on the managed cluster")

	// The hosted klusterlet writes the add-on's hub kubeconfig on the hosting cluster.
	secretName := addon.SecretName(hostedAddOn, certificatesv1.KubeAPIServerClientSignerName)
	Eventually(ctx, func(g Gomega) map[string][]byte {
		s, err := mgmtKube.CoreV1().Secrets(kl).Get(ctx, secretName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return s.Data
	}).WithTimeout(2*waitTimeout).Should(And(HaveKey(addon.TLSCertKey), HaveKey(addon.KubeconfigKey)),
		"the add-on's hub kubeconfig Secret %s/%s on the management cluster, written by %s's agent", kl, secretName, kl)
	_, err = managedKube.CoreV1().Secrets(kl).Get(ctx, secretName, metav1.GetOptions{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no add-on Secret on the managed cluster: %v", err)

	// The test stands in for the add-on's agent: its Lease on the hosting cluster.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: kl, Name: hostedAddOn},
		Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))}}
	Expect(mgmtClient.Create(ctx, lease)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtClient.Delete(ctx, lease))).To(Succeed()) }, NodeTimeout(time.Minute))
	Eventually(ctx, mcaCondition(ctx, cluster, hostedAddOn, addonv1alpha1.ManagedClusterAddOnConditionAvailable)).WithTimeout(waitTimeout).
		Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", addonv1alpha1.AddonAvailableReasonLeaseLeaseUpdated)),
			"ManagedClusterAddOn %s/%s Available from its Lease on the management cluster", cluster, hostedAddOn)

	// A restarted agent removes what a hosted add-on gone while it was down left on the hosting
	// cluster, listing only the hosted add-ons' install namespaces there (it may list no more).
	orphan := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kl, Name: "hosted-e2e-gone-hub-kubeconfig",
		Labels: map[string]string{addon.SecretAddOnLabel: "hosted-e2e-gone", addon.SecretKlusterletLabel: kl}}}
	Expect(mgmtClient.Create(ctx, orphan)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtClient.Delete(ctx, orphan))).To(Succeed()) }, NodeTimeout(time.Minute))
	restart := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"e2e.flotilla.dev/restarted-at":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	Expect(mgmtClient.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: kl, Name: kl + "-registration-agent"}},
		client.RawPatch(types.MergePatchType, []byte(restart)), client.FieldOwner("e2e"))).To(Succeed(), "restarting %s-registration-agent", kl)
	Eventually(ctx, secretGone(ctx, kl, orphan.Name)).WithTimeout(2*waitTimeout).Should(BeTrue(),
		"the restarted %s-registration-agent removes Secret %s/%s of an add-on no longer enabled from the management cluster", kl, kl, orphan.Name)
	Expect(secretGone(ctx, kl, secretName)()).To(BeFalse(), "the enabled hosted add-on keeps its Secret")

	// Disabling the add-on removes its hosted work (so its Deployment) and its Secret.
	Expect(hubAClient.Delete(ctx, mca)).To(Succeed())
	Eventually(ctx, func() bool {
		return apierrors.IsNotFound(hubAClient.Get(ctx, client.ObjectKey{Namespace: hosting, Name: hostedWork}, &workv1.ManifestWork{}))
	}).WithTimeout(waitTimeout).Should(BeTrue(), "ManifestWork %s/%s removed from hub A with the ManagedClusterAddOn", hosting, hostedWork)
	Eventually(ctx, func() bool {
		_, err := mgmtKube.AppsV1().Deployments(kl).Get(ctx, hostedAddOn+"-agent", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(waitTimeout).Should(BeTrue(), "the add-on's Deployment removed from the management cluster with its work")
	Eventually(ctx, secretGone(ctx, kl, secretName)).WithTimeout(waitTimeout).Should(BeTrue(),
		"the disabled add-on's Secret %s/%s removed from the management cluster", kl, secretName)
	unjoinHosting(ctx)

}

// unjoinHosting unjoins the management cluster's own (Singleton) klusterlet, while the Hosted
// Klusterlets still run there: the shared managed-side objects the operator applied for it
// (the AppliedManifestWork and ClusterClaim CRDs, the add-on namespaces) go with it, since the
// Hosted Klusterlets' agent namespaces there are their management side, not klusterlets of
// this cluster (klusterlet/operator lastKlusterlet).
func unjoinHosting(ctx context.Context) {
	GinkgoHelper()
	out, err := cli(ctx, "unjoin", "--kubeconfig", management.KubeconfigPath)
	Expect(err).NotTo(HaveOccurred(), "flotilla unjoin of the hosting cluster's own klusterlet")
	Expect(out).To(ContainSubstring("klusterlet klusterlet removed"))
	Eventually(ctx, func() []string { return deploymentNames(ctx, mgmtClient, install.AgentNamespace) }).WithTimeout(waitTimeout).
		Should(BeEmpty(), "the hosting cluster's own agent Deployment gone")
	for _, o := range []client.Object{
		crd("appliedmanifestworks.work.open-cluster-management.io"),
		crd("clusterclaims.cluster.open-cluster-management.io"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorv1.AddOnDefaultNamespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management-managed-serviceaccount"}},
	} {
		Eventually(ctx, func() bool { return apierrors.IsNotFound(mgmtClient.Get(ctx, client.ObjectKeyFromObject(o), o)) }).
			WithTimeout(waitTimeout).Should(BeTrue(), "%T %s removed from the management cluster by the unjoin of its own klusterlet", o, o.GetName())
	}
}

// crd is CustomResourceDefinition name, for a client without the apiextensions types.
func crd(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}

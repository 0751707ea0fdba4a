package hosted

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/join"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
	"github.com/flotilla-dev/flotilla/klusterlet/work"
)

const (
	specTimeout = 4 * time.Minute
	waitTimeout = 90 * time.Second
)

func newKlusterlet(name string, mode operatorv1.InstallMode, namespace, cluster string) *operatorv1.Klusterlet {
	return &operatorv1.Klusterlet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: operatorv1.KlusterletSpec{
		ClusterName: cluster, Namespace: namespace, DeployOption: operatorv1.KlusterletDeployOption{Mode: mode}}}
}

// putExternalKubeconfig writes the external-managed-kubeconfig Secret of a Hosted Klusterlet
// once the operator created its agent namespace.
func putExternalKubeconfig(ctx context.Context, name string, data []byte) {
	GinkgoHelper()
	Eventually(func() error {
		_, err := mgmtKube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	}).WithContext(ctx).WithTimeout(waitTimeout).Should(Succeed(), "the operator to create the agent namespace %s", name)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: operatorv1.ExternalManagedKubeConfigSecret, Namespace: name},
		Data: map[string][]byte{"kubeconfig": data}}
	_, err := mgmtKube.CoreV1().Secrets(name).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = mgmtKube.CoreV1().Secrets(name).Update(ctx, s, metav1.UpdateOptions{})
	}
	Expect(err).NotTo(HaveOccurred())
}

// waitCondition waits until Klusterlet name has condition typ with status and reason, and
// returns it.
func waitCondition(ctx context.Context, name, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	GinkgoHelper()
	var got metav1.Condition
	Eventually(func(g Gomega) {
		k := &operatorv1.Klusterlet{}
		g.Expect(mgmtClient.Get(ctx, client.ObjectKey{Name: name}, k)).To(Succeed())
		c := meta.FindStatusCondition(k.Status.Conditions, typ)
		g.Expect(c).NotTo(BeNil(), "condition %s", typ)
		g.Expect(c.ObservedGeneration).To(Equal(k.Generation), "condition %s observes generation", typ)
		g.Expect([]string{string(c.Status), c.Reason}).To(Equal([]string{string(status), reason}), "condition %s: %s", typ, c.Message)
		got = *c
	}).WithContext(ctx).WithTimeout(waitTimeout).Should(Succeed(), "Klusterlet %s to have %s=%s %s", name, typ, status, reason)
	return got
}

func deleteKlusterlet(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(mgmtClient.Delete(ctx, &operatorv1.Klusterlet{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
	Eventually(func() error {
		err := mgmtClient.Get(ctx, client.ObjectKey{Name: name}, &operatorv1.Klusterlet{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there")
	}).WithContext(ctx).WithTimeout(2*waitTimeout).Should(Succeed(), "Klusterlet %s to be cleaned up and gone", name)
}

// snapshotKinds are what a snapshot lists.
var snapshotKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "secrets"},
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
}

// snapshot lists the objects of snapshotKinds on a cluster by resource/namespace/name, but
// the control plane's own.
func snapshot(ctx context.Context, cfg *rest.Config) []string {
	GinkgoHelper()
	dyn := dynamic.NewForConfigOrDie(cfg)
	var out []string
	for _, gvr := range snapshotKinds {
		l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, o := range l.Items {
			// What the control plane makes for itself, also while a spec runs, is not ours.
			if slices.Contains(systemNamespaces, o.GetNamespace()) || strings.HasPrefix(o.GetName(), "system:") {
				continue
			}
			out = append(out, gvr.Resource+"/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	slices.Sort(out)
	return out
}

var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// expectSnapshot expects the cluster's snapshot to equal before, naming what differs.
func expectSnapshot(ctx context.Context, cfg *rest.Config, before []string, what string) {
	GinkgoHelper()
	after := snapshot(ctx, cfg)
	var extra, missing []string
	for _, o := range after {
		if !slices.Contains(before, o) {
			extra = append(extra, o)
		}
	}
	for _, o := range before {
		if !slices.Contains(after, o) {
			missing = append(missing, o)
		}
	}
	Expect(extra).To(BeEmpty(), "%s: left behind", what)
	Expect(missing).To(BeEmpty(), "%s: deleted", what)
}

// labelled lists the objects of snapshotKinds on a cluster the operator applied for
// Klusterlet name.
func labelled(ctx context.Context, cfg *rest.Config, name string) []string {
	GinkgoHelper()
	dyn := dynamic.NewForConfigOrDie(cfg)
	var out []string
	for _, gvr := range snapshotKinds {
		l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: kop.ManagedByLabel + "=" + kop.ManagedByValue + "," +
			operatorv1.KlusterletNamespaceLabel + "=" + name})
		Expect(err).NotTo(HaveOccurred())
		for _, o := range l.Items {
			out = append(out, gvr.Resource+"/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func deploymentNames(ctx context.Context, c client.Client, namespace string) []string {
	GinkgoHelper()
	l := &appsv1.DeploymentList{}
	Expect(c.List(ctx, l, client.InNamespace(namespace))).To(Succeed())
	var out []string
	for _, d := range l.Items {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

func generations(ctx context.Context, namespace string, names ...string) map[string]int64 {
	GinkgoHelper()
	out := map[string]int64{}
	for _, n := range names {
		d := &appsv1.Deployment{}
		Expect(mgmtClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, d)).To(Succeed())
		out[n] = d.Generation
	}
	return out
}

var _ = Describe("klusterlet operator", func() {
	It("renders <name>-agent in Singleton mode and the registration and work agents in Default mode, and removes them with the Klusterlet", func(ctx SpecContext) {
		before := snapshot(ctx, management.Config)
		single := newKlusterlet("klusterlet", operatorv1.InstallModeSingleton, "open-cluster-management-single", "single")
		def := newKlusterlet("klusterlet-default", operatorv1.InstallModeDefault, "open-cluster-management-default", "default")
		Expect(mgmtClient.Create(ctx, single)).To(Succeed())
		Expect(mgmtClient.Create(ctx, def)).To(Succeed())

		waitCondition(ctx, single.Name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		waitCondition(ctx, def.Name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		Expect(deploymentNames(ctx, mgmtClient, "open-cluster-management-single")).To(Equal([]string{"klusterlet-agent"}))
		Expect(deploymentNames(ctx, mgmtClient, "open-cluster-management-default")).To(Equal([]string{"klusterlet-default-registration-agent", "klusterlet-default-work-agent"}))

		// Status: the Deployments (no Pods run here), generations and clusteradm's entry.
		waitCondition(ctx, single.Name, operatorv1.ConditionKlusterletAvailable, metav1.ConditionFalse, operatorv1.ReasonKlusterletNoAvailablePods)
		waitCondition(ctx, single.Name, operatorv1.ConditionRegistrationDesiredDegraded, metav1.ConditionTrue, operatorv1.ReasonKlusterletUnavailablePods)
		waitCondition(ctx, single.Name, operatorv1.ConditionValidConfiguration, metav1.ConditionTrue, operatorv1.ReasonConfigurationValid)
		// No agent ran: neither the bootstrap nor the hub kubeconfig Secret exists.
		hc := waitCondition(ctx, single.Name, operatorv1.ConditionHubConnectionDegraded, metav1.ConditionTrue,
			operatorv1.ReasonBootstrapSecretMissing+","+operatorv1.ReasonHubKubeConfigSecretMissing)
		Expect(hc.Message).To(ContainSubstring(`Failed to get hub kubeconfig secret open-cluster-management-single/hub-kubeconfig-secret: secrets "hub-kubeconfig-secret" not found`))
		k := &operatorv1.Klusterlet{}
		Expect(mgmtClient.Get(ctx, client.ObjectKey{Name: single.Name}, k)).To(Succeed())
		Expect(k.Status.RelatedResources).To(ContainElement(operatorv1.RelatedResourceMeta{Group: "apps", Version: "v1", Resource: "deployments",
			Namespace: "open-cluster-management-single", Name: "klusterlet-agent"}))
		Expect(k.Status.Generations).To(ConsistOf(operatorv1.GenerationStatus{Group: "apps", Version: "v1", Resource: "deployments",
			Namespace: "open-cluster-management-single", Name: "klusterlet-agent", LastGeneration: 1}))
		Expect(k.Finalizers).To(Equal([]string{operatorv1.KlusterletFinalizer}))

		deleteKlusterlet(ctx, single.Name)
		deleteKlusterlet(ctx, def.Name)
		expectSnapshot(ctx, management.Config, before, "the management cluster as before the Klusterlets")
	}, SpecTimeout(specTimeout))

	It("builds the managed cluster's clients from external-managed-kubeconfig, applies each side to its cluster, hands the agent a working token, and cleans both sides", func(ctx SpecContext) {
		const name = "klusterlet-managed"
		mgmtBefore, managedBefore := snapshot(ctx, management.Config), snapshot(ctx, managed.Config)
		k := newKlusterlet(name, operatorv1.InstallModeSingletonHosted, "open-cluster-management-"+name, "managed")
		Expect(mgmtClient.Create(ctx, k)).To(Succeed())

		By("no Secret")
		c := waitCondition(ctx, name, operatorv1.ConditionReadyToApply, metav1.ConditionFalse, operatorv1.ReasonKlusterletPrepareFailed)
		Expect(c.Message).To(Equal(`Failed to build managed cluster clients: secrets "external-managed-kubeconfig" not found`))

		By("a Secret that holds no kubeconfig")
		putExternalKubeconfig(ctx, name, []byte("not: [a kubeconfig"))
		Eventually(func(g Gomega) {
			k := &operatorv1.Klusterlet{}
			g.Expect(mgmtClient.Get(ctx, client.ObjectKey{Name: name}, k)).To(Succeed())
			c := meta.FindStatusCondition(k.Status.Conditions, operatorv1.ConditionReadyToApply)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(operatorv1.ReasonKlusterletPrepareFailed))
			g.Expect(c.Message).To(HavePrefix("Failed to build managed cluster clients: "))
			g.Expect(c.Message).To(ContainSubstring("yaml"), "the parse error")
		}).WithContext(ctx).WithTimeout(waitTimeout).Should(Succeed(), "ReadyToApply to name the parse error")

		By("the managed cluster's kubeconfig")
		putExternalKubeconfig(ctx, name, managedKubeconfig)
		c = waitCondition(ctx, name, operatorv1.ConditionReadyToApply, metav1.ConditionTrue, operatorv1.ReasonKlusterletPrepared)
		Expect(c.Message).To(HavePrefix("Klusterlet is ready to apply, the external managed kubeconfig secret was created at: "))
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)

		got := &operatorv1.Klusterlet{}
		Expect(mgmtClient.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		Expect(got.Finalizers).To(ConsistOf(operatorv1.KlusterletFinalizer, operatorv1.KlusterletHostedFinalizer))

		By("each side on its cluster only")
		Expect(deploymentNames(ctx, mgmtClient, name)).To(Equal([]string{name + "-agent"}))
		Expect(deploymentNames(ctx, managedClient, "")).To(BeEmpty(), "no agent runs on the managed cluster")
		onManaged, onManagement := labelled(ctx, managed.Config, name), labelled(ctx, management.Config, name)
		Expect(onManaged).To(ContainElements(
			"customresourcedefinitions//appliedmanifestworks.work.open-cluster-management.io",
			"namespaces//open-cluster-management-"+name,
			"serviceaccounts/open-cluster-management-"+name+"/"+name+"-agent"))
		Expect(onManagement).To(ContainElements("namespaces//"+name, "deployments/"+name+"/"+name+"-agent",
			"secrets/"+name+"/"+operatorv1.ExternalManagedKubeConfigAgentSecret))
		for _, o := range onManaged {
			Expect(onManagement).NotTo(ContainElement(o), "%s is on the managed cluster only", o)
			Expect(slices.Contains(mgmtBefore, o)).To(BeFalse(), "%s is on the managed cluster only", o)
		}
		for _, o := range onManagement {
			Expect(slices.Contains(managedBefore, o) || slices.Contains(onManaged, o)).To(BeFalse(), "%s is on the management cluster only", o)
		}

		By("the agent's token Secret authenticates it on the managed cluster")
		s, err := mgmtKube.CoreV1().Secrets(name).Get(ctx, operatorv1.ExternalManagedKubeConfigAgentSecret, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
		Expect(err).NotTo(HaveOccurred())
		review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:open-cluster-management-" + name + ":" + name + "-agent"))

		By("what the agents would have left: an AppliedManifestWork of the hub with what it owns, an add-on's Secret")
		const hub = "https://hub1.flotilla.invalid:6443"
		boot := clientcmdapi.NewConfig()
		boot.Clusters["hub"] = &clientcmdapi.Cluster{Server: hub}
		boot.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub"}
		boot.CurrentContext = "hub"
		bootData, err := clientcmd.Write(*boot)
		Expect(err).NotTo(HaveOccurred())
		_, err = mgmtKube.CoreV1().Secrets(name).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-hub-kubeconfig", Namespace: name},
			Data: map[string][]byte{"kubeconfig": bootData}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		hash := work.HubHash(hub)
		amwGVR := schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}
		amw := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "work.open-cluster-management.io/v1", "kind": "AppliedManifestWork",
			"metadata": map[string]any{"name": hash + "-work1", "finalizers": []any{"cluster.open-cluster-management.io/applied-manifest-work-cleanup"}},
			"spec":     map[string]any{"hubHash": hash, "manifestWorkName": "work1", "agentID": "test"}}}
		amw, err = dynamic.NewForConfigOrDie(managed.Config).Resource(amwGVR).Create(ctx, amw, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = managedKube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "applied-by-work1", Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "work.open-cluster-management.io/v1", Kind: "AppliedManifestWork", Name: amw.GetName(), UID: amw.GetUID()}}}},
			metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = managedKube.CoreV1().Secrets(operatorv1.AddOnDefaultNamespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "addon1-hub-kubeconfig",
			Namespace: operatorv1.AddOnDefaultNamespace, Labels: map[string]string{addon.SecretKlusterletLabel: name, addon.SecretAddOnLabel: "addon1"}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("deleting the Klusterlet")
		deleteKlusterlet(ctx, name)
		_, err = dynamic.NewForConfigOrDie(managed.Config).Resource(amwGVR).Get(ctx, amw.GetName(), metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the AppliedManifestWork is gone: %v", err)
		// The garbage collector follows (this one lists no applied resources to wait for).
		Eventually(func() bool {
			_, err := managedKube.CoreV1().ConfigMaps("default").Get(ctx, "applied-by-work1", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(waitTimeout).Should(BeTrue(), "what the AppliedManifestWork owned to be garbage collected")
		expectSnapshot(ctx, managed.Config, managedBefore, "the managed cluster as before the Klusterlet")
		expectSnapshot(ctx, management.Config, mgmtBefore, "the management cluster as before the Klusterlet")
	}, SpecTimeout(specTimeout))

	It("runs two Hosted Klusterlets of one managed cluster (two hubs) side by side, and keeps the shared namespaces until the last goes", func(ctx SpecContext) {
		mgmtBefore, managedBefore := snapshot(ctx, management.Config), snapshot(ctx, managed.Config)
		names := []string{"klusterlet-managed", "klusterlet-managed-hub2"}
		for _, n := range names {
			Expect(mgmtClient.Create(ctx, newKlusterlet(n, operatorv1.InstallModeHosted, "open-cluster-management-"+n, "managed"))).To(Succeed())
			putExternalKubeconfig(ctx, n, managedKubeconfig)
		}
		for _, n := range names {
			waitCondition(ctx, n, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
			waitCondition(ctx, n, operatorv1.ConditionReadyToApply, metav1.ConditionTrue, operatorv1.ReasonKlusterletPrepared)
			Expect(deploymentNames(ctx, mgmtClient, n)).To(Equal([]string{n + "-registration-agent", n + "-work-agent"}))
			for _, secret := range []string{operatorv1.ExternalManagedKubeConfigRegistrationSecret, operatorv1.ExternalManagedKubeConfigWorkSecret} {
				_, err := mgmtKube.CoreV1().Secrets(n).Get(ctx, secret, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
			}
		}
		// Each object on the managed cluster the operator applied is either shared by every
		// klusterlet there or, by its name, one Klusterlet's, labelled with that name: a name
		// both rendered would carry the label of the last applier only.
		shared := []string{
			"customresourcedefinitions//appliedmanifestworks.work.open-cluster-management.io",
			"customresourcedefinitions//clusterclaims.cluster.open-cluster-management.io",
			"namespaces//" + operatorv1.AddOnDefaultNamespace,
			"namespaces//open-cluster-management-managed-serviceaccount",
		}
		owner := func(id string) string {
			found := ""
			for _, n := range names {
				if (strings.Contains(id, n+"-") || strings.Contains(id, n+":") || strings.HasSuffix(id, "/"+n) || strings.HasSuffix(id, "-"+n)) && len(n) > len(found) {
					found = n
				}
			}
			return found
		}
		dyn := dynamic.NewForConfigOrDie(managed.Config)
		per := map[string][]string{}
		for _, gvr := range snapshotKinds {
			l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: kop.ManagedByLabel + "=" + kop.ManagedByValue})
			Expect(err).NotTo(HaveOccurred())
			for _, o := range l.Items {
				id := gvr.Resource + "/" + o.GetNamespace() + "/" + o.GetName()
				if slices.Contains(shared, id) {
					per["shared"] = append(per["shared"], id)
					continue
				}
				Expect(o.GetLabels()[operatorv1.KlusterletNamespaceLabel]).To(Equal(owner(id)), "%s belongs to one Klusterlet", id)
				per[owner(id)] = append(per[owner(id)], id)
			}
		}
		GinkgoWriter.Println("objects on the managed cluster:", per)
		Expect(per["shared"]).To(ConsistOf(shared))
		Expect(len(per[names[0]])).To(BeNumerically(">", 10))
		Expect(len(per[names[1]])).To(Equal(len(per[names[0]])), "the two Klusterlets apply as many objects each")

		By("deleting the first keeps the shared namespaces and CRDs for the second")
		deleteKlusterlet(ctx, names[0])
		for _, ns := range []string{operatorv1.AddOnDefaultNamespace, "open-cluster-management-managed-serviceaccount"} {
			_, err := managedKube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "namespace %s kept", ns)
		}
		Expect(labelled(ctx, managed.Config, names[1])).To(ContainElement("namespaces//open-cluster-management-" + names[1]))
		_, err := managedKube.CoreV1().Namespaces().Get(ctx, "open-cluster-management-"+names[0], metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the first klusterlet namespace is gone: %v", err)

		deleteKlusterlet(ctx, names[1])
		expectSnapshot(ctx, managed.Config, managedBefore, "the managed cluster as before the Klusterlets")
		expectSnapshot(ctx, management.Config, mgmtBefore, "the management cluster as before the Klusterlets")
	}, SpecTimeout(2*specTimeout))

	It("rolls only the work agent for a work field, and refuses a mode change without touching a Deployment", func(ctx SpecContext) {
		const name = "klusterlet-gen"
		k := newKlusterlet(name, operatorv1.InstallModeHosted, "open-cluster-management-"+name, "gen")
		Expect(mgmtClient.Create(ctx, k)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { deleteKlusterlet(ctx, name) }, NodeTimeout(specTimeout))
		putExternalKubeconfig(ctx, name, managedKubeconfig)
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		reg, work := name+"-registration-agent", name+"-work-agent"
		before := generations(ctx, name, reg, work)

		Expect(mgmtClient.Patch(ctx, k, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"workConfiguration":{"statusSyncInterval":"30s"}}}`)))).To(Succeed())
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		Expect(generations(ctx, name, reg, work)).To(Equal(map[string]int64{reg: before[reg], work: before[work] + 1}))

		before = generations(ctx, name, reg, work)
		Expect(mgmtClient.Patch(ctx, k, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"deployOption":{"mode":"SingletonHosted"}}}`)))).To(Succeed())
		c := waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionFalse, operatorv1.ReasonUnsupportedConfiguration)
		Expect(c.Message).To(ContainSubstring("spec.deployOption.mode"))
		Expect(generations(ctx, name, reg, work)).To(Equal(before))
		Expect(deploymentNames(ctx, mgmtClient, name)).To(Equal([]string{reg, work}), "no %s-agent", name)
	}, SpecTimeout(specTimeout))
})

var _ = Describe("hosted join and unjoin", func() {
	It("installs the operator, the Klusterlet and its Secrets on the hosting cluster, refuses another hub's join of that Klusterlet, and unjoin restores both clusters", func(ctx SpecContext) {
		mgmtBefore, managedBefore := snapshot(ctx, management.Config), snapshot(ctx, managed.Config)
		o := join.Options{ClusterName: "joined", HubAPIServer: "https://hub1.flotilla.invalid:6443", HubCA: management.CAData, Token: "abcdef.0123456789abcdef"}
		o.KlusterletName = join.HostedKlusterletName(o.ClusterName)
		boot, err := o.BootstrapKubeconfig()
		Expect(err).NotTo(HaveOccurred())
		objs, err := join.RenderHosted(o, operatorv1.InstallModeSingletonHosted, boot, managedKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(join.CheckHostedConflict(ctx, management.Config, o.KlusterletName, o.ClusterName, o.HubAPIServer)).To(Succeed())
		Expect(install.Apply(ctx, management.Config, objs)).To(Succeed())

		const name = "klusterlet-joined"
		Expect(deploymentNames(ctx, mgmtClient, kop.OperatorNamespace)).To(Equal([]string{"klusterlet"}), "the operator's Deployment")
		for _, s := range []string{"bootstrap-hub-kubeconfig", operatorv1.ExternalManagedKubeConfigSecret} {
			_, err := mgmtKube.CoreV1().Secrets(name).Get(ctx, s, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "Secret %s/%s", name, s)
		}
		// The operator runs in-process here in place of its Deployment.
		waitCondition(ctx, name, operatorv1.ConditionReadyToApply, metav1.ConditionTrue, operatorv1.ReasonKlusterletPrepared)
		waitCondition(ctx, name, operatorv1.ConditionKlusterletApplied, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied)
		Expect(deploymentNames(ctx, mgmtClient, name)).To(Equal([]string{name + "-agent"}))
		k := &operatorv1.Klusterlet{}
		Expect(mgmtClient.Get(ctx, client.ObjectKey{Name: name}, k)).To(Succeed())
		Expect(k.Spec.Namespace).To(Equal("open-cluster-management-" + name))
		_, err = managedKube.CoreV1().Namespaces().Get(ctx, "open-cluster-management-"+name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the klusterlet namespace on the managed cluster")

		By("another hub's join of the same Klusterlet is refused")
		err = join.CheckHostedConflict(ctx, management.Config, name, o.ClusterName, "https://hub2.flotilla.invalid:6443")
		Expect(err).To(MatchError(ContainSubstring("--klusterlet-name klusterlet-joined-<hub>")))
		Expect(err).To(MatchError(ContainSubstring("https://hub1.flotilla.invalid:6443")))

		By("unjoin")
		done, err := join.UnjoinHosted(ctx, management.Config, name, func(s string) { GinkgoWriter.Println(s) })
		Expect(err).NotTo(HaveOccurred())
		Expect(done).To(BeTrue())
		expectSnapshot(ctx, managed.Config, managedBefore, "the managed cluster as before the join")
		expectSnapshot(ctx, management.Config, mgmtBefore, "the hosting cluster as before the join")
	}, SpecTimeout(specTimeout))
})

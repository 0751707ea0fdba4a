// Package argocd checks the seeds' Argo CD integration (scenarios §5) against a real hub:
// Argo CD's own ApplicationSet cluster-decision-resource generator, configured by the
// seeds' ocm-placement-generator ConfigMap and running with the seeds' RBAC as the
// argocd-applicationset-controller service account, lists the clusters of Flotilla's
// PlacementDecisions and follows them when the placement's decisions change.
package argocd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/argoproj/argo-cd/v3/applicationset/controllers/template"
	"github.com/argoproj/argo-cd/v3/applicationset/generators"
	"github.com/argoproj/argo-cd/v3/applicationset/utils"
	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/settings"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestArgoCD(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Argo CD generator e2e")
}

var (
	controlPlane *environment.ControlPlane
	hubClient    client.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env := hubtest.StartControlPlane(ctx)
	controlPlane, hubClient = env.ControlPlane, env.Client
	// The hub with its default gates: the global set holds every cluster, as the seeds bind it.
	env.StartHub(manager.Options{})
}, NodeTimeout(5*time.Minute))

// The seeds' objects (scenarios §5, steps 3 to 7), plus what an Argo CD installation brings:
// its namespace, the controller's service account and its read access to its own ConfigMaps
// and cluster Secrets.
const (
	argoInstall = `
apiVersion: v1
kind: Namespace
metadata:
  name: argocd
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: argocd-applicationset-controller
  namespace: argocd
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: argocd-applicationset-controller
  namespace: argocd
rules:
- apiGroups: [""]
  resources: ["configmaps", "secrets"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: argocd-applicationset-controller
  namespace: argocd
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: argocd-applicationset-controller
subjects:
- kind: ServiceAccount
  namespace: argocd
  name: argocd-applicationset-controller
`
	seedConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: ocm-placement-generator
  namespace: argocd
data:
  apiVersion: cluster.open-cluster-management.io/v1beta1
  kind: placementdecisions
  statusListKey: decisions
  matchKey: clusterName
`
	seedRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: ocm-placement-consumer
  namespace: argocd
rules:
- apiGroups: ["cluster.open-cluster-management.io"]
  resources: ["placementdecisions"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: ocm-placement-consumer:argocd
  namespace: argocd
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: ocm-placement-consumer
subjects:
- kind: ServiceAccount
  namespace: argocd
  name: argocd-applicationset-controller
`
	// clusteradm clusterset bind global --namespace argocd
	seedBinding = `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata:
  name: global
  namespace: argocd
spec:
  clusterSet: global
`
	seedPlacement = `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: guestbook-app-placement
  namespace: argocd
spec:
  numberOfClusters: 10
`
	seedApplicationSet = `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: guestbook-app
  namespace: argocd
spec:
  generators:
    - clusterDecisionResource:
        configMapRef: ocm-placement-generator
        labelSelector:
          matchLabels:
            cluster.open-cluster-management.io/placement: guestbook-app-placement
        requeueAfterSeconds: 30
  template:
    metadata:
      name: '{{clusterName}}-guestbook-app'
    spec:
      project: default
      source:
        repoURL: 'https://github.com/argoproj/argocd-example-apps.git'
        targetRevision: HEAD
        path: guestbook
      destination:
        name: '{{clusterName}}'
        namespace: guestbook
      syncPolicy:
        automated:
          prune: true
        syncOptions:
          - CreateNamespace=true
`
)

var _ = Describe("Argo CD's cluster-decision-resource generator", func() {
	It("lists the clusters of the placement's decisions and follows them", func(ctx SpecContext) {
		apply(ctx, argoInstall, seedConfigMap, seedRBAC, seedBinding)
		// Three managed clusters, each registered to Argo CD (step 2) as a cluster Secret.
		for _, name := range []string{"cluster1", "cluster2", "cluster3"} {
			managedCluster(ctx, name)
			apply(ctx, fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata:
  name: %[1]s-cluster-secret
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: cluster
stringData:
  name: %[1]s
  server: https://%[1]s.example.com:6443
  config: '{}'
`, name))
		}
		apply(ctx, seedPlacement)
		placement := client.ObjectKey{Namespace: "argocd", Name: "guestbook-app-placement"}
		Eventually(func(g Gomega) {
			p := &clusterv1beta1.Placement{}
			g.Expect(hubClient.Get(ctx, placement, p)).To(Succeed())
			g.Expect(p.Status.NumberOfSelectedClusters).To(BeEquivalentTo(3))
		}).Should(Succeed())

		gen, appSet := generator(ctx)
		apps := func(g Gomega) []string {
			params, err := gen.GenerateParams(&appSet.Spec.Generators[0], appSet, nil)
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, p := range params {
				// What Argo CD would name the Application and where it would deploy it.
				g.Expect(p["name"]).To(Equal(p["clusterName"]))
				g.Expect(p["server"]).To(Equal(fmt.Sprintf("https://%s.example.com:6443", p["clusterName"])))
				app, err := (&utils.Render{}).RenderTemplateParams(template.GetTempApplication(appSet.Spec.Template), appSet.Spec.SyncPolicy, p, appSet.Spec.GoTemplate, appSet.Spec.GoTemplateOptions)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(app.Spec.Destination.Name).To(Equal(p["clusterName"]))
				names = append(names, app.Name)
			}
			sort.Strings(names)
			return names
		}
		Eventually(apps).Should(Equal([]string{"cluster1-guestbook-app", "cluster2-guestbook-app", "cluster3-guestbook-app"}))

		By("a cluster the placement no longer selects leaves the generator's list")
		p := &clusterv1beta1.Placement{}
		Expect(hubClient.Get(ctx, placement, p)).To(Succeed())
		p.Spec.Predicates = []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"cluster2"}}}}}}}
		Expect(hubClient.Update(ctx, p)).To(Succeed())
		Eventually(apps).Should(Equal([]string{"cluster1-guestbook-app", "cluster3-guestbook-app"}))
	}, SpecTimeout(5*time.Minute))
})

// generator is Argo CD's cluster-decision-resource generator as its ApplicationSet controller
// builds it, with the controller's own identity, and the seeds' ApplicationSet.
func generator(ctx context.Context) (generators.Generator, *argov1alpha1.ApplicationSet) {
	GinkgoHelper()
	cfg := rest.CopyConfig(controlPlane.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:argocd:argocd-applicationset-controller"}
	clientset, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	dyn, err := dynamic.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	informer, err := settings.NewClusterInformer(clientset, "argocd")
	Expect(err).NotTo(HaveOccurred())
	stop := make(chan struct{})
	DeferCleanup(func(ctx SpecContext) { close(stop) }, NodeTimeout(2*time.Minute))
	go informer.Run(stop)
	Eventually(informer.HasSynced).Should(BeTrue())

	appSet := &argov1alpha1.ApplicationSet{}
	Expect(yaml.UnmarshalStrict([]byte(seedApplicationSet), appSet)).To(Succeed())
	Expect(appSet.Spec.Generators).To(HaveLen(1))
	return generators.NewDuckTypeGenerator(ctx, dyn, clientset, "argocd", informer), appSet
}

// managedCluster creates an accepted, available ManagedCluster named name (labelled name=…),
// deleted after the spec.
func managedCluster(ctx context.Context, name string) {
	GinkgoHelper()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"name": name}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	Expect(hubClient.Create(ctx, mc)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, mc))).To(Succeed()) }, NodeTimeout(2*time.Minute))
	Eventually(func() error {
		if err := hubClient.Get(ctx, client.ObjectKeyFromObject(mc), mc); err != nil {
			return err
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: metav1.ConditionTrue, Reason: "Simulated", Message: "simulated"})
		return hubClient.Status().Update(ctx, mc)
	}).Should(Succeed())
}

// apply creates the YAML objects (documents separated by ---), deleted after the spec.
func apply(ctx context.Context, docs ...string) {
	GinkgoHelper()
	for _, doc := range docs {
		for _, part := range splitYAML(doc) {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(part), &u.Object)).To(Succeed())
			Expect(hubClient.Create(ctx, u)).To(Succeed(), "creating %s %s", u.GetKind(), u.GetName())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, u))).To(Succeed()) }, NodeTimeout(2*time.Minute))
		}
	}
}

func splitYAML(doc string) []string {
	var out []string
	for _, part := range strings.Split(doc, "\n---\n") {
		var probe map[string]any
		if err := yaml.Unmarshal([]byte(part), &probe); err == nil && len(probe) > 0 {
			out = append(out, part)
		}
	}
	return out
}

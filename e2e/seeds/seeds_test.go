package seeds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/core/crds"
)

const (
	// seedDir holds the example objects extracted from the OCM documentation.
	seedDir = "../testdata/seeds"
	// testNamespace receives namespaced seeds that name no namespace.
	testNamespace = "seeds-e2e"
	fieldManager  = "flotilla-e2e-seeds"
)

// seedFiles lists seedDir's YAML files when the spec tree is built.
func seedFiles() []string {
	paths, err := filepath.Glob(filepath.Join(seedDir, "*.yaml"))
	if err != nil {
		panic(fmt.Sprintf("listing %s: %v", seedDir, err))
	}
	slices.Sort(paths)
	return paths
}

var _ = Describe("Seed examples", func() {
	files := seedFiles()

	It("exist in e2e/testdata/seeds", func(ctx SpecContext) {
		Expect(files).NotTo(BeEmpty(), "no *.yaml in %s: the suite would check nothing", seedDir)
	}, SpecTimeout(5*time.Minute))

	entries := make([]TableEntry, 0, len(files))
	for _, p := range files {
		entries = append(entries, Entry(filepath.Base(p), p, SpecTimeout(5*time.Minute)))
	}
	DescribeTable("are accepted by the API server", func(ctx SpecContext, path string) {
		objs := decodeFile(path)
		Expect(objs).NotTo(BeEmpty(), "%s holds no object", path)
		for _, u := range objs {
			applySeed(ctx, path, u)
		}
	}, entries)
})

// decodeFile reads every YAML document of path as an object.
func decodeFile(path string) []*unstructured.Unstructured {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		Expect(err).NotTo(HaveOccurred(), "decoding %s", path)
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// target resolves where u lives: its cluster, resource client and namespace (created if
// missing; testNamespace when u names none).
func target(ctx SpecContext, u *unstructured.Unstructured) (*cluster, dynamic.ResourceInterface) {
	GinkgoHelper()
	gvk := u.GroupVersionKind()
	c := forKind(gvk.GroupKind())
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	Expect(err).NotTo(HaveOccurred(), "%s is not served by %s", gvk, c.name)
	res := c.dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return c, res
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(testNamespace)
	}
	ensureNamespace(ctx, c, u.GetNamespace())
	return c, res.Namespace(u.GetNamespace())
}

func ensureNamespace(ctx SpecContext, c *cluster, name string) {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(c.config)
	Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred(), "creating namespace %s on %s", name, c.name)
	}
}

// applySeed server-side-applies u with strict field validation (an unknown or duplicate
// field is an error rather than silently pruned), then its status through the status
// subresource, and deletes it again at the end of the spec so that seeds sharing a name
// do not interact.
func applySeed(ctx SpecContext, path string, u *unstructured.Unstructured) {
	GinkgoHelper()
	c, res := target(ctx, u)
	what := fmt.Sprintf("%s %s (from %s) on %s", u.GetKind(), key(u), filepath.Base(path), c.name)
	Expect(u.GetName()).NotTo(BeEmpty(), "%s: seeds must be named", what)
	body, err := json.Marshal(u.Object)
	Expect(err).NotTo(HaveOccurred())
	force := true
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict}

	stored, err := res.Patch(ctx, u.GetName(), types.ApplyPatchType, body, opts)
	Expect(err).NotTo(HaveOccurred(), "%s rejected", what)
	DeferCleanup(deleteAndWait, res, u.GetName(), what)
	Expect(stored.GetUID()).NotTo(BeEmpty())

	if _, hasStatus := u.Object["status"]; hasStatus {
		_, err := res.Patch(ctx, u.GetName(), types.ApplyPatchType, body, opts, "status")
		Expect(err).NotTo(HaveOccurred(), "%s: status rejected", what)
	}
}

func deleteAndWait(ctx SpecContext, res dynamic.ResourceInterface, name, what string) {
	err := res.Delete(ctx, name, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred(), "deleting %s", what)
	}
	Eventually(ctx, func() error {
		_, err := res.Get(ctx, name, metav1.GetOptions{})
		return err
	}).Should(Satisfy(apierrors.IsNotFound), "%s still exists after delete", what)
}

func key(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// invalid is a variant of a documented object that the OCM schema rules out.
type invalid struct {
	yaml string
	// mustContain are substrings of the rejection: the field path and the offending value.
	mustContain []string
}

var _ = DescribeTable("Invalid objects are rejected naming the field",
	func(ctx SpecContext, tc invalid) {
		u := &unstructured.Unstructured{}
		Expect(utilyaml.Unmarshal([]byte(tc.yaml), &u.Object)).To(Succeed())
		c, res := target(ctx, u)
		_, err := res.Create(ctx, u, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		if err == nil {
			DeferCleanup(deleteAndWait, res, u.GetName(), u.GetKind()+" "+key(u))
		}
		Expect(err).To(HaveOccurred(), "%s %s was accepted by %s", u.GetKind(), key(u), c.name)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
		for _, s := range tc.mustContain {
			Expect(err.Error()).To(ContainSubstring(s))
		}
	},
	Entry("Placement prioritizer weight above 10", invalid{yaml: placementWithWeight(11),
		mustContain: []string{"spec.prioritizerPolicy.configurations[0].weight", "10"}}, SpecTimeout(5*time.Minute)),
	Entry("Placement prioritizer weight below -10", invalid{yaml: placementWithWeight(-11),
		mustContain: []string{"spec.prioritizerPolicy.configurations[0].weight", "-10"}}, SpecTimeout(5*time.Minute)),
	Entry("Placement prioritizer with an unknown score coordinate type", invalid{yaml: `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: bad-coordinate, namespace: default}
spec:
  prioritizerPolicy:
    mode: Exact
    configurations:
    - scoreCoordinate: {type: Magic, builtIn: Balance}
`, mustContain: []string{"spec.prioritizerPolicy.configurations[0].scoreCoordinate.type", `"Magic"`}}, SpecTimeout(5*time.Minute)),
	Entry("Placement toleration with an unknown effect", invalid{yaml: `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: bad-toleration, namespace: default}
spec:
  tolerations:
  - {key: gpu, operator: Exists, effect: NoSchedule}
`, mustContain: []string{"spec.tolerations[0].effect", `"NoSchedule"`}}, SpecTimeout(5*time.Minute)),
	Entry("ManagedCluster taint with a kubelet effect", invalid{yaml: `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: bad-taint}
spec:
  hubAcceptsClient: true
  taints:
  - {key: gpu, value: "true", effect: NoSchedule}
`, mustContain: []string{"spec.taints[0].effect", `"NoSchedule"`}}, SpecTimeout(5*time.Minute)),
	Entry("ManagedClusterSet with an unknown selector type", invalid{yaml: `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: bad-selector}
spec:
  clusterSelector:
    selectorType: ByName
`, mustContain: []string{"spec.clusterSelector.selectorType", `"ByName"`}}, SpecTimeout(5*time.Minute)),
	Entry("ManagedClusterSetBinding named differently from its set", invalid{yaml: `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: other, namespace: default}
spec:
  clusterSet: dev
`, mustContain: []string{"same name as the target ManagedClusterSet"}}, SpecTimeout(5*time.Minute)),
	Entry("ManifestWork manifest config with an unknown update strategy", invalid{yaml: `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: bad-strategy, namespace: cluster1}
spec:
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: default}}
  manifestConfigs:
  - resourceIdentifier: {resource: configmaps, name: cm, namespace: default}
    updateStrategy:
      type: Replace
`, mustContain: []string{"spec.manifestConfigs[0].updateStrategy.type", `"Replace"`}}, SpecTimeout(5*time.Minute)),
	Entry("ManifestWork with an unknown delete propagation policy", invalid{yaml: `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: bad-delete, namespace: cluster1}
spec:
  deleteOption:
    propagationPolicy: Background
  workload:
    manifests:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: default}}
`, mustContain: []string{"spec.deleteOption.propagationPolicy", `"Background"`}}, SpecTimeout(5*time.Minute)),
	Entry("ClusterManagementAddOn with an unknown install strategy", invalid{yaml: `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata: {name: bad-install}
spec:
  installStrategy:
    type: Everywhere
`, mustContain: []string{"spec.installStrategy.type", `"Everywhere"`}}, SpecTimeout(5*time.Minute)),
)

func placementWithWeight(w int) string {
	return fmt.Sprintf(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: weight-%d, namespace: default}
spec:
  prioritizerPolicy:
    mode: Exact
    configurations:
    - scoreCoordinate: {type: BuiltIn, builtIn: Steady}
      weight: %d
`, w+100, w)
}

var _ = Describe("Installed CRDs", func() {
	It("are all Established on the hub, and the agent-side ones on the managed cluster", func(ctx SpecContext) {
		all, err := crds.Objects()
		Expect(err).NotTo(HaveOccurred())
		Expect(all).NotTo(BeEmpty())
		for _, want := range all {
			expectEstablished(ctx, hub, want.Name)
			if agentKinds[schemaGK(want)] {
				expectEstablished(ctx, managed, want.Name)
			}
		}
	}, SpecTimeout(5*time.Minute))

	// The columns of OCM's CRDs as `kubectl get` prints them (upper-cased). OCM defines no
	// Age column for Placement and ManifestWorkReplicaSet, and the API server adds Age
	// only when a CRD defines no columns at all.
	DescribeTable("print OCM's columns in the Table API", func(ctx SpecContext, path string, want []string) {
		Expect(tableColumns(ctx, hub, path)).To(Equal(want))
	},
		Entry("managedclusters", "/apis/cluster.open-cluster-management.io/v1/managedclusters",
			[]string{"NAME", "HUB ACCEPTED", "MANAGED CLUSTER URLS", "JOINED", "AVAILABLE", "AGE"}, SpecTimeout(5*time.Minute)),
		Entry("placements", "/apis/cluster.open-cluster-management.io/v1beta1/namespaces/default/placements",
			[]string{"NAME", "SUCCEEDED", "REASON", "SELECTEDCLUSTERS"}, SpecTimeout(5*time.Minute)),
		Entry("manifestworkreplicasets", "/apis/work.open-cluster-management.io/v1alpha1/namespaces/default/manifestworkreplicasets",
			[]string{"NAME", "PLACEMENT", "FOUND", "MANIFESTWORKS", "APPLIED"}, SpecTimeout(5*time.Minute)),
	)
})

func schemaGK(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupKind {
	return schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
}

func expectEstablished(ctx SpecContext, c *cluster, name string) {
	GinkgoHelper()
	u, err := c.dynamic.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred(), "CRD %s on %s", name, c.name)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd)).To(Succeed())
	established := false
	for _, cond := range crd.Status.Conditions {
		established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
	}
	Expect(established).To(BeTrue(), "CRD %s on %s is not Established: %+v", name, c.name, crd.Status.Conditions)
}

// tableColumns lists path as `kubectl get` does (server-side printing) and returns the
// column names, upper-cased as kubectl prints them. client-go's request retries the 429
// an API server answers while a just-established CRD's storage initialises.
func tableColumns(ctx SpecContext, c *cluster, path string) []string {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(c.config)
	Expect(err).NotTo(HaveOccurred())
	body, err := cs.CoreV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), "GET %s: %s", path, body)
	table := &metav1.Table{}
	Expect(json.Unmarshal(body, table)).To(Succeed())
	Expect(table.Kind).To(Equal("Table"), "GET %s did not return a Table: %s", path, body)
	names := make([]string, 0, len(table.ColumnDefinitions))
	for _, col := range table.ColumnDefinitions {
		names = append(names, strings.ToUpper(col.Name))
	}
	return names
}

package work

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

var _ = Describe("A work that brings its own CRD and namespace", func() {
	It("applies a custom resource listed before the CRD and namespace it needs (the agent applies CRDs and Namespaces first)", func(ctx SpecContext) {
		// The custom resource comes first in the work, its namespace second, its CRD last; the
		// ClusterRole letting the work agent manage Widgets (the seeds' aggregated ClusterRole)
		// after them.
		w := createWork(newWork(cluster2, "crd-and-cr", `
apiVersion: example.flotilla.dev/v1
kind: Widget
metadata: {name: gadget, namespace: widgets}
spec: {size: 3}
`, `
apiVersion: v1
kind: Namespace
metadata: {name: widgets}
`, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.flotilla.dev}
spec:
  group: example.flotilla.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: open-cluster-management:klusterlet-work:widgets
  labels: {open-cluster-management.io/aggregate-to-work: "true"}
rules:
- apiGroups: [example.flotilla.dev]
  resources: [widgets]
  verbs: [get, list, watch, create, update, patch, delete]
`))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(getWork(Default, w).Status.ResourceStatus.Manifests[0].ResourceMeta).To(And(
			HaveField("Ordinal", int32(0)), HaveField("Kind", "Widget"), HaveField("Resource", "widgets")))
		gadget := &unstructured.Unstructured{}
		gadget.SetAPIVersion("example.flotilla.dev/v1")
		gadget.SetKind("Widget")
		Expect(managed[cluster2].client.Get(ctx, client.ObjectKey{Namespace: "widgets", Name: "gadget"}, gadget)).To(Succeed())
		Expect(gadget.Object["spec"]).To(HaveKeyWithValue("size", BeNumerically("==", 3)))
	}, SpecTimeout(5*time.Minute))
})

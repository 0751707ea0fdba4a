package work

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// machinesCRD installs a CRD like Cluster API's machines.cluster.x-k8s.io (the seeds'
// example) on cluster, removed after the spec.
func machinesCRD(cluster string) {
	GinkgoHelper()
	crd := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: machines.cluster.x-k8s.io}
spec:
  group: cluster.x-k8s.io
  scope: Namespaced
  names: {plural: machines, singular: machine, kind: Machine}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`), &crd.Object)).To(Succeed())
	c := managed[cluster].client
	Expect(c.Create(suiteCtx, crd)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(c.Delete(ctx, crd))).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(crd), crd)) }).
			Should(BeTrue(), "CRD machines.cluster.x-k8s.io on %s is deleted", cluster)
	}, NodeTimeout(2*time.Minute))
	Eventually(func(g Gomega) []any {
		g.Expect(c.Get(suiteCtx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		return conds
	}).Should(ContainElement(And(HaveKeyWithValue("type", "Established"), HaveKeyWithValue("status", "True"))), "the CRD is established")
}

const machine = `
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: machine-1, namespace: default}
spec: {bootstrap: {dataSecretName: machine-1}}
`

// The seeds' "Permission setting for work agent": the work agent acts as klusterlet-work-sa
// with admin, CRDs, Namespaces and RBAC, and a ManifestWork can grant it more.
var _ = Describe("The work agent's permissions", func() {
	for _, option := range []struct {
		cluster, name string
		grant         []any
	}{
		// Option 1: a ClusterRole labelled open-cluster-management.io/aggregate-to-work.
		{cluster1, "an aggregated ClusterRole (seeds' option 1)", []any{`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: open-cluster-management:klusterlet-work:my-role
  labels:
    open-cluster-management.io/aggregate-to-work: "true"
rules:
  - apiGroups: ["cluster.x-k8s.io"]
    resources: ["machines"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
`}},
		// Option 2: a ClusterRole and a ClusterRoleBinding to klusterlet-work-sa.
		{cluster2, "a ClusterRole bound to klusterlet-work-sa (seeds' option 2)", []any{`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: open-cluster-management:klusterlet-work:my-role
rules:
  - apiGroups: ["cluster.x-k8s.io"]
    resources: ["machines"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
`, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: open-cluster-management:klusterlet-work:my-binding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: open-cluster-management:klusterlet-work:my-role
subjects:
  - kind: ServiceAccount
    name: klusterlet-work-sa
    namespace: open-cluster-management-agent
`}},
	} {
		It("refuses a custom resource beyond its rights, naming the verb and resource, and applies it once "+option.name+" grants them", func(ctx SpecContext) {
			cluster := option.cluster
			machinesCRD(cluster)
			w := createWork(newWork(cluster, "machine", machine))
			Eventually(manifestCondition(w, 0, workv1.ManifestApplied)).Should(And(cond(metav1.ConditionFalse, "AppliedManifestFailed"),
				HaveField("Message", And(
					ContainSubstring(`User "system:serviceaccount:open-cluster-management-agent:klusterlet-work-sa"`),
					ContainSubstring(`cannot get resource "machines" in API group "cluster.x-k8s.io"`)))))
			m := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(machine), &m.Object)).To(Succeed())
			Expect(gone(cluster, m)()).To(BeTrue(), "nothing applied")

			grant := createWork(newWork(cluster, "permission-set", option.grant...))
			Eventually(workCondition(grant, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
			Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
			Expect(gone(cluster, m)()).To(BeFalse(), "the Machine is applied")

			// Deleting the work deletes its Machine (through its AppliedManifestWork).
			Expect(hubClient.Delete(suiteCtx, w)).To(Succeed())
			Eventually(func() bool { return apierrors.IsNotFound(hubClient.Get(suiteCtx, client.ObjectKeyFromObject(w), w)) }).
				Should(BeTrue(), fmt.Sprintf("ManifestWork %s/%s is deleted", w.Namespace, w.Name))
			Expect(gone(cluster, m)()).To(BeTrue(), "the Machine is deleted with its work")
		}, SpecTimeout(5*time.Minute))
	}
})

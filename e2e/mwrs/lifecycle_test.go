package mwrs

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
)

// complete waits until replica set ns/name rolled out completely with every work applied.
func complete(ctx SpecContext, ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		r := getRS(ctx, ns, name)
		g.Expect(r.Status.Conditions).To(ContainElements(
			conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionPlacementRolledOut, "True", workv1alpha1.ReasonComplete),
			conditionOf(workv1alpha1.ManifestWorkReplicaSetConditionManifestworkApplied, "True", workv1alpha1.ReasonAsExpected)))
	}).Should(Succeed())
}

var _ = Describe("Placement changes", func() {
	It("deletes the work of a cluster that leaves the placement, and brings it back when it returns", func(ctx SpecContext) {
		const ns, set, rs = "mwrs-leave", "mwrs-leave", "app"
		cs := names("leave", 3)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "env", "prod")...)
		placement(ctx, ns, "prod", set, []string{"env", "prod"}, "")
		decided(ctx, ns, "prod", cs)
		startAgent(ns, rs, succeed, nil)
		replicaSet(ctx, ns, rs, "v1", []string{"{name: prod}"}, "")
		complete(ctx, ns, rs)
		Expect(workClusters(ctx, ns, rs)).To(Equal(cs))

		// A work deleted by hand comes back.
		uid := works(ctx, ns, rs)[cs[0]].UID
		Expect(hubClient.Delete(ctx, &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cs[0], Name: rs}})).To(Succeed())
		Eventually(func(g Gomega) {
			w := works(ctx, ns, rs)[cs[0]]
			g.Expect(w).NotTo(BeNil())
			g.Expect(w.UID).NotTo(Equal(uid))
		}).Should(Succeed())
		complete(ctx, ns, rs)

		// A work whose spec someone edits gets the template back.
		edited := works(ctx, ns, rs)[cs[2]]
		patch(ctx, edited, `{"spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "edited", "namespace": "default"}}]}}}`)
		Eventually(func() string {
			return string(works(ctx, ns, rs)[cs[2]].Spec.Workload.Manifests[0].Raw)
		}).Should(ContainSubstring(`"version":"v1"`))
		complete(ctx, ns, rs)

		patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cs[1]}}, `{metadata: {labels: {env: dev}}}`)
		Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal([]string{cs[0], cs[2]}))
		Eventually(func() workv1alpha1.ManifestWorkReplicaSetSummary { return getRS(ctx, ns, rs).Status.Summary }).Should(Equal(
			workv1alpha1.ManifestWorkReplicaSetSummary{Total: 2, Applied: 2, Available: 2, DesiredTotal: 2, Updated: 2}))
		complete(ctx, ns, rs)

		patch(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cs[1]}}, `{metadata: {labels: {env: prod}}}`)
		Eventually(func() []string { return workClusters(ctx, ns, rs) }).Should(Equal(cs))
		Eventually(func() workv1alpha1.ManifestWorkReplicaSetSummary { return getRS(ctx, ns, rs).Status.Summary }).Should(Equal(
			workv1alpha1.ManifestWorkReplicaSetSummary{Total: 3, Applied: 3, Available: 3, DesiredTotal: 3, Updated: 3}))
	}, SpecTimeout(5*time.Minute))
})

// holdFinalizer is a test finalizer that keeps a deleted work around, as an agent's would.
const holdFinalizer = "e2e.flotilla.dev/hold"

var _ = Describe("Cascade deletion", func() {
	// setup creates two clusters, a replica set with the policy over them and waits until it
	// is complete; the first cluster's work gets holdFinalizer (released after the spec).
	setup := func(ctx SpecContext, ns, policy string) []string {
		cs := names(ns, 2)
		namespace(ctx, ns)
		bind(ctx, ns, ns)
		clusters(ctx, ns, sims(cs, "app", ns)...)
		placement(ctx, ns, "p", ns, []string{"app", ns}, "")
		decided(ctx, ns, "p", cs)
		startAgent(ns, "app", succeed, nil)
		more := ""
		if policy != "" {
			more = "cascadeDeletionPolicy: " + policy
		}
		replicaSet(ctx, ns, "app", "v1", []string{"{name: p}"}, more)
		complete(ctx, ns, "app")
		r := getRS(ctx, ns, "app")
		Expect(r.Finalizers).To(ContainElement(workv1alpha1.ManifestWorkReplicaSetFinalizer))
		if policy == "" {
			Expect(r.Spec.CascadeDeletionPolicy).To(Equal(workv1alpha1.Background), "the default policy")
		}
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cs[0], Name: "app"}}
		patch(ctx, w, `{metadata: {finalizers: [`+holdFinalizer+`]}}`)
		DeferCleanup(func(ctx SpecContext) { release(ctx, cs[0], "app") }, NodeTimeout(2*time.Minute))
		return cs
	}
	deleteRS := func(ctx SpecContext, ns string) {
		GinkgoHelper()
		Expect(hubClient.Delete(ctx, &workv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}})).To(Succeed())
	}
	rsGone := func(ctx SpecContext, ns string) func() bool {
		return func() bool {
			return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &workv1alpha1.ManifestWorkReplicaSet{}))
		}
	}
	workState := func(ctx SpecContext, cluster string) func() string {
		return func() string {
			w := &workv1.ManifestWork{}
			if err := hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "app"}, w); err != nil {
				if apierrors.IsNotFound(err) {
					return "gone"
				}
				return err.Error()
			}
			if !w.DeletionTimestamp.IsZero() {
				return "deleting"
			}
			return "present"
		}
	}

	It("Background (the default) lets the replica set go at once and deletes its works", func(ctx SpecContext) {
		cs := setup(ctx, "mwrs-bg", "")
		deleteRS(ctx, "mwrs-bg")
		Eventually(rsGone(ctx, "mwrs-bg")).Should(BeTrue())
		Eventually(workState(ctx, cs[1])).Should(Equal("gone"))
		// The held work is being deleted (the controller deletes works one after another, in no
		// set order), but the replica set did not wait for it.
		Eventually(workState(ctx, cs[0])).Should(Equal("deleting"))
		release(ctx, cs[0], "app")
		Eventually(workState(ctx, cs[0])).Should(Equal("gone"))
	}, SpecTimeout(5*time.Minute))

	It("Foreground keeps the replica set until its works are gone", func(ctx SpecContext) {
		cs := setup(ctx, "mwrs-fg", "Foreground")
		deleteRS(ctx, "mwrs-fg")
		Eventually(workState(ctx, cs[1])).Should(Equal("gone"))
		// Works are deleted one after another in no set order: the held one may come second.
		Eventually(workState(ctx, cs[0])).Should(Equal("deleting"))
		Consistently(func(g Gomega) {
			r := getRS(ctx, "mwrs-fg", "app")
			g.Expect(r.DeletionTimestamp.IsZero()).To(BeFalse())
			g.Expect(r.Finalizers).To(ContainElement(workv1alpha1.ManifestWorkReplicaSetFinalizer))
		}).Should(Succeed())
		release(ctx, cs[0], "app")
		Eventually(workState(ctx, cs[0])).Should(Equal("gone"))
		Eventually(rsGone(ctx, "mwrs-fg")).Should(BeTrue())
	}, SpecTimeout(5*time.Minute))
})

// release removes holdFinalizer from a work, if it is still there.
func release(ctx SpecContext, cluster, name string) {
	GinkgoHelper()
	Eventually(func() error {
		w := &workv1.ManifestWork{}
		if err := hubClient.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !controllerutil.RemoveFinalizer(w, holdFinalizer) {
			return nil
		}
		return hubClient.Update(ctx, w)
	}).Should(Succeed())
}

var _ = Describe("kubectl get", func() {
	It("prints OCM's columns", func(ctx SpecContext) {
		const ns, set = "mwrs-table", "mwrs-table"
		cs := names("table", 1)
		namespace(ctx, ns)
		bind(ctx, ns, set)
		clusters(ctx, set, sims(cs, "app", "table")...)
		placement(ctx, ns, "p", set, []string{"app", "table"}, "")
		decided(ctx, ns, "p", cs)
		startAgent(ns, "app", succeed, nil)
		replicaSet(ctx, ns, "app", "v1", []string{"{name: p}"}, "")
		complete(ctx, ns, "app")

		// Server-side printing, as kubectl get asks for it.
		httpClient, err := rest.HTTPClientFor(controlPlane.Config)
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			controlPlane.Config.Host+"/apis/work.open-cluster-management.io/v1alpha1/namespaces/"+ns+"/manifestworkreplicasets/app", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := httpClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
		table := &metav1.Table{}
		Expect(json.Unmarshal(body, table)).To(Succeed())
		Expect(table.Kind).To(Equal("Table"))
		// Name first (the server adds it), then the +kubebuilder:printcolumn markers of OCM's type.
		type column struct{ Name, Type, Description string }
		var columns []column
		for i, c := range table.ColumnDefinitions {
			if i == 0 {
				c.Description = "" // the API server's wording, not ours
			}
			columns = append(columns, column{c.Name, c.Type, c.Description})
		}
		Expect(columns).To(Equal([]column{
			{"Name", "string", ""},
			{"Placement", "string", "Reason"},
			{"Found", "string", "Configured"},
			{"ManifestWorks", "string", "Reason"},
			{"Applied", "string", "Applied"},
		}))
		Expect(table.Rows).To(HaveLen(1))
		Expect(table.Rows[0].Cells).To(Equal([]any{"app", "AsExpected", "True", "AsExpected", "True"}))
	}, SpecTimeout(5*time.Minute))
})

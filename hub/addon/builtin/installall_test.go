package builtin_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
)

// The split hub's add-on manager may not create ManagedClusterSets (the registration controller
// creates the global set); the API server refuses its create even when the set exists, before
// it looks. install-all must then find the set and go on, and say what is missing when it is not.
var _ = Describe("install-all as the split add-on manager's identity", func() {
	It("creates the Placement global once the global ManagedClusterSet exists, without create on ManagedClusterSets", func(ctx SpecContext) {
		const user = "split-addon-manager"
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test:" + user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{clusterv1beta2.GroupVersion.Group}, Resources: []string{"managedclustersets"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{clusterv1beta2.GroupVersion.Group}, Resources: []string{"placements", "managedclustersetbindings"}, Verbs: []string{"get", "create"}},
			{APIGroups: []string{clusterv1beta2.GroupVersion.Group}, Resources: []string{"managedclustersets/bind"}, ResourceNames: []string{clusterv1beta2.GlobalClusterSetName}, Verbs: []string{"create"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "create", "patch", "escalate", "bind"}},
			{APIGroups: []string{"addon.open-cluster-management.io"}, Resources: []string{"clustermanagementaddons"}, Verbs: []string{"get", "create"}},
		}}
		Expect(admin.Create(ctx, role)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, role))).To(Succeed()) })
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test:" + user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
		Expect(admin.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, binding))).To(Succeed()) })
		cfg, err := fleet.Hub.UserConfig(user)
		Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: admin.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		r := &builtin.Reconciler{Client: c, Enabled: []string{builtin.ClusterProxy}, InstallAll: true}
		req := reconcile.Request{NamespacedName: client.ObjectKey{Name: builtin.ClusterProxy}}

		// No registration controller runs here: the set is missing, and the error says so.
		Eventually(ctx, func() error {
			_, err := r.Reconcile(ctx, req)
			return err
		}).WithTimeout(30*time.Second).Should(MatchError(ContainSubstring("the registration controller creates the global ManagedClusterSet")),
			"install-all refused the missing global ManagedClusterSet, naming who creates it")

		set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: clusterv1beta2.GlobalClusterSetName},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}}}
		Expect(admin.Create(ctx, set)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, set))).To(Succeed()) })
		Eventually(ctx, func() error {
			_, err := r.Reconcile(ctx, req)
			return err
		}).WithTimeout(30*time.Second).Should(Succeed(), "install-all went on once the global ManagedClusterSet existed")
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: builtin.InstallAllNamespace, Name: builtin.InstallAllPlacement}, &clusterv1beta1.Placement{})).
			To(Succeed(), "the Placement global created")
	}, SpecTimeout(2*time.Minute))
})

package admission

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cmd/flotilla/commands"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/environment"
)

// The cluster-set commands run in-process, as a user types them, with that user's kubeconfig
// (a client certificate): the hub's join and bind policies decide, not the admin's rights.
var _ = Describe("flotilla clusterset, as a user", func() {
	const (
		user    = "clio"
		set     = "cli-set"
		oldA    = "cli-old-a"
		oldB    = "cli-old-b"
		c1, c2  = "cli-c1", "cli-c2"
		ns      = "cli-ws"
		managed = "cli-apps"
	)

	It("creates a set, moves clusters into it and binds it only as far as the join and bind gates allow", func(ctx SpecContext) {
		cfg, err := controlPlane.UserConfig(user)
		Expect(err).NotTo(HaveOccurred())
		kubeconfig := filepath.Join(GinkgoT().TempDir(), user+".kubeconfig")
		Expect(environment.WriteKubeconfig(kubeconfig, user, cfg)).To(Succeed())
		cli := func(ctx context.Context, args ...string) (string, error) {
			root := commands.NewRoot()
			var out, errOut strings.Builder
			root.SetArgs(append(args, "--kubeconfig", kubeconfig))
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := root.ExecuteContext(ctx)
			return out.String(), err
		}
		// ok runs the command until it succeeds (RBAC granted just before may take a moment to
		// reach the authorizer) and returns its output.
		ok := func(args ...string) string {
			GinkgoHelper()
			var out string
			Eventually(func() (err error) {
				out, err = cli(ctx, args...)
				return err
			}).WithContext(ctx).Should(Succeed(), "flotilla %s", strings.Join(args, " "))
			return out
		}
		label := func(name string) string {
			GinkgoHelper()
			mc := &clusterv1.ManagedCluster{}
			Expect(admin.Get(ctx, client.ObjectKey{Name: name}, mc)).To(Succeed())
			return mc.Labels[clusterv1beta2.ClusterSetLabel]
		}

		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for name, from := range map[string]string{c1: oldA, c2: oldB} {
			Expect(admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{clusterv1beta2.ClusterSetLabel: from}}})).To(Succeed())
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, o := range []client.Object{
				&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c1}},
				&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c2}},
				&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			} {
				Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed())
			}
		}, NodeTimeout(2*time.Minute))
		// RBAC on the objects; the gates' subresources are granted step by step below.
		grant(ctx, "", "clio-clustersets", user,
			rule(clusterGroup, "managedclusters", nil, "get", "list", "patch"),
			rule(clusterGroup, "managedclustersets", nil, "get", "list", "create", "patch"),
			rule(clusterGroup, "managedclustersetbindings", nil, "get", "list", "create", "delete"))

		By("create clusterset, twice")
		Expect(ok("create", "clusterset", set)).To(Equal("Clusterset " + set + " is created\n"))
		Expect(ok("create", "clusterset", set)).To(Equal("Clusterset " + set + " is already created\n"))

		By("set without managedclustersets/join: the gate's message, no cluster changed")
		Eventually(func() error {
			out, err := cli(ctx, "clusterset", "set", set, "--clusters", c2+","+c1)
			Expect(out).To(BeEmpty())
			return err
		}).WithContext(ctx).Should(And(deniedBy("join", "user "+user+" cannot add the ManagedCluster "+c2+" to the ManagedClusterSet "+set+
			" (label "+clusterv1beta2.ClusterSetLabel+`): needs "create" on managedclustersets/join.cluster.open-cluster-management.io named `+set),
			MatchError(ContainSubstring("no cluster was changed"))))
		Expect(label(c1)).To(Equal(oldA))
		Expect(label(c2)).To(Equal(oldB))

		By("join on the new set and on " + oldB + " only: " + c1 + " may not leave " + oldA + ", so " + c2 + " does not move either")
		grant(ctx, "", "clio-join", user, rule(clusterGroup, "managedclustersets/join", []string{set, oldB}, "create"))
		Eventually(func() error {
			_, err := cli(ctx, "clusterset", "set", set, "--clusters", c2+","+c1)
			return err
		}).WithContext(ctx).Should(And(deniedBy("join", "user "+user+" cannot remove the ManagedCluster "+c1+" from the ManagedClusterSet "+oldA),
			MatchError(ContainSubstring("no cluster was changed"))))
		Expect(label(c1)).To(Equal(oldA))
		Expect(label(c2)).To(Equal(oldB), "a refusal for one cluster must leave every cluster as it was")

		By("--dry-run with every permission: the hub accepts, nothing is stored")
		grant(ctx, "", "clio-join-old", user, rule(clusterGroup, "managedclustersets/join", []string{oldA}, "create"))
		Expect(ok("clusterset", "set", set, "--clusters", c2+","+c1, "--dry-run")).To(HaveSuffix(
			"Cluster " + c2 + " is set, from ClusterSet " + oldB + " to Clusterset " + set + "\n" +
				"Cluster " + c1 + " is set, from ClusterSet " + oldA + " to Clusterset " + set + "\n"))
		Expect(label(c1)).To(Equal(oldA))
		Expect(label(c2)).To(Equal(oldB))

		By("granted: the labels are set; a rerun says they are already in")
		Expect(ok("clusterset", "set", set, "--clusters", c2+","+c1)).To(Equal(
			"Cluster " + c2 + " is set, from ClusterSet " + oldB + " to Clusterset " + set + "\n" +
				"Cluster " + c1 + " is set, from ClusterSet " + oldA + " to Clusterset " + set + "\n"))
		Expect(label(c1)).To(Equal(set))
		Expect(label(c2)).To(Equal(set))
		Expect(ok("clusterset", "set", set, "--clusters", c1)).To(Equal("Cluster " + c1 + " is already in Clusterset " + set + "\n"))

		By("bind without managedclustersets/bind: denied, no binding")
		binding := &clusterv1beta2.ManagedClusterSetBinding{}
		bindingKey := client.ObjectKey{Namespace: ns, Name: set}
		Eventually(func() error {
			_, err := cli(ctx, "clusterset", "bind", set, "--namespace", ns)
			return err
		}).WithContext(ctx).Should(deniedBy("bind", "user "+user+" cannot bind the ManagedClusterSet "+set+" to namespace "+ns+
			" (spec.clusterSet of the ManagedClusterSetBinding "+set+`): needs "create" on managedclustersets/bind.cluster.open-cluster-management.io named `+set))
		Expect(apierrors.IsNotFound(admin.Get(ctx, bindingKey, binding))).To(BeTrue(), "binding %s exists after a denied bind", bindingKey)

		By("granted: a binding named after the set; a rerun says it is already bound")
		grant(ctx, "", "clio-bind", user, rule(clusterGroup, "managedclustersets/bind", []string{set}, "create"))
		Expect(ok("clusterset", "bind", set, "--namespace", ns)).To(Equal("Clusterset " + set + " is bound to Namespace " + ns + "\n"))
		Expect(admin.Get(ctx, bindingKey, binding)).To(Succeed())
		Expect(binding.Spec.ClusterSet).To(Equal(set))
		Expect(ok("clusterset", "bind", set, "--namespace", ns)).To(Equal("Clusterset " + set + " is already bound to Namespace " + ns + "\n"))

		By("set --namespaces adds managed namespaces; get clustersets shows them, the members and the bound namespace")
		Expect(ok("clusterset", "set", set, "--namespaces", managed)).To(Equal("Processing managed namespaces: [" + managed + "]\n\n" +
			"Successfully updated Clusterset " + set + "\nAdded 1 managed namespace(s): " + managed + "\nTotal managed namespaces in clusterset: 1\n"))
		Expect(ok("clusterset", "set", set, "--namespaces", managed)).To(HaveSuffix("All specified namespaces already exist in Clusterset " + set + "\n"))
		s := &clusterv1beta2.ManagedClusterSet{}
		Expect(admin.Get(ctx, client.ObjectKey{Name: set}, s)).To(Succeed())
		Expect(s.Spec.ManagedNamespaces).To(Equal([]clusterv1.ManagedNamespaceConfig{{Name: managed}}))
		Eventually(func(g Gomega) {
			out, err := cli(ctx, "get", "clustersets")
			g.Expect(err).NotTo(HaveOccurred())
			var row []string
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 0 && f[0] == set {
					row = f
				}
			}
			g.Expect(len(row)).To(BeNumerically(">", 5), "no row %s in:\n%s", set, out)
			g.Expect(row[:5]).To(Equal([]string{set, "ExclusiveClusterSetLabel", ns, c1 + "," + c2, managed}), out)
			g.Expect(strings.Join(row[5:], " ")).To(Equal("2 ManagedClusters selected"), out)
		}).WithContext(ctx).Should(Succeed())

		By("unbind, twice: the second finds no binding and succeeds")
		Expect(ok("clusterset", "unbind", set, "--namespace", ns)).To(Equal("Clusterset " + set + " is unbind from namespace " + ns + "\n"))
		Expect(apierrors.IsNotFound(admin.Get(ctx, bindingKey, binding))).To(BeTrue(), "binding %s still exists after unbind", bindingKey)
		Expect(ok("clusterset", "unbind", set, "--namespace", ns)).To(Equal("Clusterset " + set + " is not bound to namespace " + ns + "; nothing to unbind\n"))

		By("unbind of a binding whose set does not exist (clusteradm would first need the set)")
		const gone = "cli-gone"
		Expect(admin.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gone},
			Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: gone}})).To(Succeed())
		Expect(ok("clusterset", "unbind", gone, "--namespace", ns)).To(Equal("Clusterset " + gone + " is unbind from namespace " + ns + "\n"))
		Expect(apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: gone}, binding))).To(BeTrue(), "binding %s/%s still exists", ns, gone)
	}, SpecTimeout(5*time.Minute))
})

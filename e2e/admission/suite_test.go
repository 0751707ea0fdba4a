// Package admission is the end-to-end suite of the hub's Rego admission policies: a real hub
// API server, the hub in-process as flotilla hub runs it (with NilExecutorValidating on and a
// 1 s evaluation timeout), and requests made by real users (client certificates), never by the
// admin unless the spec is about the admin.
package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/e2e/internal/hubtest"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

func TestAdmissionE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Hub admission policies e2e")
}

// clusterNamespace is a ManagedCluster's namespace: ManifestWorks go there.
const clusterNamespace = "cluster1"

// evalTimeout is the hub's --policy-eval-timeout in this suite.
const evalTimeout = time.Second

var (
	controlPlane *environment.ControlPlane
	scheme       *runtime.Scheme
	admin        client.Client
	logger       logr.Logger
)

var _ = BeforeSuite(func(ctx SpecContext) {
	env := hubtest.StartControlPlane(ctx)
	controlPlane, scheme, admin, logger = env.ControlPlane, env.Scheme, env.Client, env.Logger
	for _, ns := range []string{clusterNamespace, "apps", "ops", "team-a", "other", "ws", "frozen"} {
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	gates, err := manager.NewFeatureGate()
	Expect(err).NotTo(HaveOccurred())
	Expect(gates.Set("NilExecutorValidating=true")).To(Succeed())
	env.StartHub(manager.Options{
		FeatureGates: gates, SkipWasmPluginController: true, SkipPluginInstall: true, PolicyEvalTimeout: evalTimeout,
	})
	// The cluster whose namespace ManifestWorks go to (input.clusterNamespace).
	Expect(admin.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}})).To(Succeed())
}, NodeTimeout(5*time.Minute))

// as is a client authenticated by a client certificate for user in groups.
func as(user string, groups ...string) client.Client {
	GinkgoHelper()
	cfg, err := controlPlane.UserConfig(user, groups...)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// grant gives subject (a user, or a group when it starts with "group:") the rules: in
// namespace with a Role, cluster-wide with a ClusterRole when namespace is "".
func grant(ctx context.Context, namespace, name, subject string, rules ...rbacv1.PolicyRule) {
	GinkgoHelper()
	s := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: subject}
	if g, ok := strings.CutPrefix(subject, "group:"); ok {
		s.Kind, s.Name = rbacv1.GroupKind, g
	}
	if namespace == "" {
		Expect(admin.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules})).To(Succeed())
		Expect(admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{s}})).To(Succeed())
		return
	}
	Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules})).To(Succeed())
	Expect(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{s}})).To(Succeed())
}

func rule(group, resource string, names []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: names, Verbs: verbs}
}

// deniedBy matches the API server's answer to a request a policy denied.
func deniedBy(policyName, message string) OmegaMatcher {
	return And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring(
		`admission webhook "policies.admission.flotilla.dev" denied the request: policy `+policyName+": "+message)))
}

// object parses YAML into an unstructured object.
func object(doc string) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
	return u
}

// createAs creates the YAML object as c; the object is deleted (by the admin) after the spec.
func createAs(ctx context.Context, c client.Client, doc string) error {
	u := object(doc)
	err := c.Create(ctx, u)
	if err == nil {
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, object(doc)))).To(Succeed())
		}, NodeTimeout(2*time.Minute))
	}
	return err
}

// pushPolicy creates or updates the policy ConfigMap name with files, as flotilla policy push
// does, and returns its new resourceVersion.
func pushPolicy(ctx context.Context, name string, files map[string]string) string {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: name,
		Labels: map[string]string{policy.ConfigMapLabel: policy.ConfigMapLabelValue}}, Data: files}
	existing := &corev1.ConfigMap{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(cm), existing); err == nil {
		existing.Data = files
		Expect(admin.Update(ctx, existing)).To(Succeed())
		return existing.ResourceVersion
	}
	Expect(admin.Create(ctx, cm)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta}))).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	return cm.ResourceVersion
}

// policyEvent waits for the hub's Event with reason on the policy ConfigMap name at
// resourceVersion and returns its note.
func policyEvent(ctx context.Context, name, resourceVersion, reason string) string {
	GinkgoHelper()
	var note string
	Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(admin.List(ctx, list, client.InNamespace(policy.DefaultNamespace))).To(Succeed())
		found := false
		for _, e := range list.Items {
			if e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == name && e.Regarding.ResourceVersion == resourceVersion && e.Reason == reason {
				note, found = e.Note, true
			}
		}
		g.Expect(found).To(BeTrue(), "no %s Event for ConfigMap %s at resourceVersion %s", reason, name, resourceVersion)
	}).WithContext(ctx).Should(Succeed())
	return note
}

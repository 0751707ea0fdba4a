// Package hubsplit runs the hub as several processes, each a subset of OCM's hub components
// (manager.Options.Run, `flotilla hub --components`), against one hub API server: together
// they do what the single-process hub does, and a stopped component stops only its own work.
package hubsplit

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/e2e/internal/fleettest"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/hub/webhook/manifestwork"
	overridewebhook "github.com/flotilla-dev/flotilla/hub/webhook/override"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

func TestHubSplit(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Split hub e2e")
}

var (
	suiteCtx context.Context
	env      *fleettest.Env
)

// The hub runs as five processes. The first (fleettest's hub, which must create the bootstrap
// identity before the chart's RBAC can be applied) runs the registration controller and
// webhook as the hub's admin, its webhooks under the default names (flotilla-hub). Every other
// component runs in a process of its own as its component's ServiceAccount with only the RBAC
// the hub chart gives it (topology Split), its webhooks under OCM's names, each controller
// process with its own leader election Lease. The specs stop and start the placement
// controller's.
var (
	workWebhook = webhook.Options{
		ConfigurationName: "cluster-manager-work-webhook",
		SecretName:        "cluster-manager-work-webhook-serving-cert",
	}
	workWebhookProcess *process
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var cancel context.CancelFunc
	suiteCtx, cancel = context.WithTimeout(context.Background(), 20*time.Minute)
	DeferCleanup(cancel)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	// What client-go's informers report (a list the RBAC refuses) goes to the spec's output.
	log.SetLogger(GinkgoLogr)
	// One control plane (no managed clusters): the klusterlets run against the hub API server.
	env = fleettest.Start(suiteCtx, fleettest.Options{Hub: manager.Options{Run: sets.New(manager.RegistrationController, manager.RegistrationWebhook)}})
	Eventually(env.Hub.Webhooks().Ready()).Should(BeClosed(), "the registration process's webhooks serve")
	applyComponentRBAC(ctx, env.HubClient)
	start(manager.WorkController, asComponent(manager.WorkController))
	addons := asComponent(manager.AddonManager)
	addons.Webhook = webhook.Options{ConfigurationName: clusterManager + "-addon-webhook", SecretName: clusterManager + "-addon-webhook-serving-cert"}
	Eventually(start(manager.AddonManager, addons).hub.Webhooks().Ready()).Should(BeClosed(), "the addon-manager process's webhooks serve")
	workWebhookProcess = start(manager.WorkWebhook, asComponent(manager.WorkWebhook))
	Eventually(workWebhookProcess.hub.Webhooks().Ready()).Should(BeClosed(), "the work-webhook process's webhooks serve")
}, NodeTimeout(5*time.Minute))

// process is a running hub process.
type process struct {
	hub    *manager.Hub
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *process) stop() {
	p.cancel()
	Eventually(p.done).Should(BeClosed(), "the hub process stops")
}

// startPlacement runs a hub process of the placement controller only.
func startPlacement() *process {
	GinkgoHelper()
	p := start(manager.PlacementController, asComponent(manager.PlacementController))
	Expect(p.hub.Webhooks()).To(BeNil(), "a placement-controller process serves no webhook")
	return p
}

// asComponent is the options of a process of component c as the chart runs it: as c's
// ServiceAccount, with c's leader election Lease (controllers) or webhook names (webhooks).
func asComponent(c string) manager.Options {
	opts := manager.Options{Config: configAs(c), Run: sets.New(c)}
	switch c {
	case manager.WorkWebhook:
		opts.Webhook = workWebhook
	case manager.RegistrationWebhook:
	default:
		opts.LeaderElection = manager.LeaderElection{Enabled: true, Name: clusterManager + "-" + c + "-lock"}
	}
	return opts
}

// start runs a hub process with opts (Config and Logger filled in when unset), as `flotilla
// hub --components ...` does (WaitForCRDs, New, Prepare, then the controllers), until it is
// stopped or the spec (or suite) that started it ends.
func start(name string, opts manager.Options) *process {
	GinkgoHelper()
	if opts.Config == nil {
		opts.Config = env.Fleet.Hub.Config
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = env.Logger.WithName(name + "-process")
	}
	Expect(manager.WaitForCRDs(suiteCtx, opts)).To(Succeed())
	h, err := manager.New(opts)
	Expect(err).NotTo(HaveOccurred(), "hub process %s", name)
	ctx, cancel := context.WithCancel(suiteCtx)
	p := &process{hub: h, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(p.done)
		Expect(h.Start(ctx)).To(Succeed(), "hub process %s", name)
	}()
	DeferCleanup(p.stop)
	return p
}

// join runs a klusterlet for cluster name (its agent namespace its own, on the hub API
// server), accepts the cluster once it has registered and waits until it is Joined.
func join(name string) {
	GinkgoHelper()
	k := env.StartKlusterlet(klusterlet.Options{Registration: registration.Config{
		ClusterName: name, ManagedConfig: env.Fleet.Hub.Config, AgentNamespace: "agent-" + name,
	}})
	DeferCleanup(k.Stop)
	Eventually(func() error {
		_, err := admin.Accept(suiteCtx, env.HubClient, env.HubKube, []string{name})
		return err
	}).Should(Succeed(), "cluster %s registers and is accepted", name)
	Eventually(func(g Gomega) {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(env.HubClient.Get(suiteCtx, client.ObjectKey{Name: name}, mc)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
	}).Should(Succeed(), "cluster %s is Joined", name)
}

// placementIn creates namespace ns bound to the default cluster set, and a Placement there.
func placementIn(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(env.HubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(env.HubClient.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterv1beta2.DefaultClusterSetName},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: clusterv1beta2.DefaultClusterSetName},
	})).To(Succeed())
	Expect(env.HubClient.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}})).To(Succeed())
}

// decided is the clusters of the decisions of Placement ns/all.
func decided(ctx context.Context, ns string) func(g Gomega) []string {
	return func(g Gomega) []string {
		list := &clusterv1beta1.PlacementDecisionList{}
		g.Expect(env.HubClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{clusterv1beta1.PlacementLabel: "all"})).To(Succeed())
		out := []string{}
		for _, d := range list.Items {
			for _, cd := range d.Status.Decisions {
				out = append(out, cd.ClusterName)
			}
		}
		return out
	}
}

// work is a ManifestWork for cluster ns whose ConfigMap has a name, or not.
func work(ns, name string, named bool) *workv1.ManifestWork {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","name":"split"}}`
	if !named {
		cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default"}}`
	}
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(cm)}}}}},
	}
}

var _ = Describe("a hub split into processes by component", func() {
	It("registers clusters, validates works and places across processes; without the placement process only placement stops", func(ctx SpecContext) {
		placementProcess := startPlacement()

		By("a cluster registers and is accepted, and a Placement gets its decision, the two processes working together")
		join("split-a")
		placementIn(ctx, "split-before")
		Eventually(decided(ctx, "split-before")).Should(ConsistOf("split-a"), "the placement process decides Placement split-before/all")

		By("with the placement process stopped, a new cluster still registers and ManifestWorks are still validated")
		placementProcess.stop()
		join("split-b")
		Expect(env.HubClient.Create(ctx, work("split-b", "valid", true))).To(Succeed())
		err := env.HubClient.Create(ctx, work("split-b", "unnamed", false))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the work webhook refuses a manifest without a name: %v", err)
		Expect(err).To(MatchError(ContainSubstring("spec.workload.manifests[0].metadata.name: Required value")))

		By("a new Placement gets no decision while no process runs the placement controller")
		placementIn(ctx, "split-after")
		Consistently(decided(ctx, "split-after"), "3s").Should(BeEmpty(), "no process decides Placement split-after/all")

		By("the placement process started again decides it")
		startPlacement()
		Eventually(decided(ctx, "split-after")).Should(ConsistOf("split-a", "split-b"), "the restarted placement process decides Placement split-after/all")
	}, SpecTimeout(5*time.Minute))
})

// splitPolicies are user policies for each webhook component's groups: a Placement delete
// (registration-webhook) and a ManifestWork delete (work-webhook), which no default policy
// matches; neither denies anyone.
const splitPolicies = `package flotilla.admission.split_%[1]s

match := [{"group": "%[2]s", "resources": ["%[1]s"], "operations": ["DELETE"]}]

deny contains msg if {
	input.user.username == "nobody-at-all"
	msg := "never"
}
`

// webhookView is what a process's configurations say: the API groups each webhook's rules
// match, by configuration kind and webhook name, and the ports their URLs reach.
type webhookView struct {
	groups   map[string]map[string]sets.Set[string] // kind → webhook → groups
	ports    sets.Set[string]
	caBundle string
}

// viewOf reads the Validating- and MutatingWebhookConfiguration named name.
func viewOf(ctx context.Context, g Gomega, name string) webhookView {
	v := webhookView{groups: map[string]map[string]sets.Set[string]{"validating": {}, "mutating": {}}, ports: sets.New[string]()}
	add := func(kind, webhook string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) {
		g.Expect(cc.URL).NotTo(BeNil(), "%s webhook %s of %s has a URL", kind, webhook, name)
		u, err := url.Parse(*cc.URL)
		g.Expect(err).NotTo(HaveOccurred())
		v.ports.Insert(u.Port())
		v.caBundle = string(cc.CABundle)
		groups := sets.New[string]()
		for _, r := range rules {
			groups.Insert(r.APIGroups...)
		}
		v.groups[kind][webhook] = groups
	}
	vwc, err := env.HubKube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "ValidatingWebhookConfiguration %s", name)
	for _, w := range vwc.Webhooks {
		add("validating", w.Name, w.ClientConfig, w.Rules)
	}
	mwc, err := env.HubKube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "MutatingWebhookConfiguration %s", name)
	for _, w := range mwc.Webhooks {
		add("mutating", w.Name, w.ClientConfig, w.Rules)
	}
	return v
}

// portOf is the port a process's webhook server listens on.
func portOf(h *manager.Hub) string {
	_, port, err := net.SplitHostPort(h.Webhooks().Addr().String())
	Expect(err).NotTo(HaveOccurred())
	return port
}

var _ = Describe("the webhook components in processes of their own", func() {
	It("each writes only its own configurations and Secret, registering the policies of its own groups", func(ctx SpecContext) {
		const workGroup = "work.open-cluster-management.io"
		clusterGroup := clusterv1.GroupVersion.Group
		By("user policies for either component's groups")
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: policy.DefaultNamespace, Name: "split-policies",
				Labels: map[string]string{policy.ConfigMapLabel: policy.ConfigMapLabelValue}},
			Data: map[string]string{
				"placements.rego":    fmt.Sprintf(splitPolicies, "placements", clusterGroup),
				"manifestworks.rego": fmt.Sprintf(splitPolicies, "manifestworks", workGroup),
			},
		}
		Expect(env.HubClient.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.HubClient.Delete(ctx, cm))).To(Succeed()) }, NodeTimeout(30*time.Second))

		regPort, workPort := portOf(env.Hub), portOf(workWebhookProcess.hub)
		ownsItsOwn := func(g Gomega) {
			reg := viewOf(ctx, g, webhook.DefaultConfigurationName)
			work := viewOf(ctx, g, workWebhook.ConfigurationName)
			g.Expect(reg.ports).To(Equal(sets.New(regPort)), "configurations %s reach the first process only", webhook.DefaultConfigurationName)
			g.Expect(work.ports).To(Equal(sets.New(workPort)), "configurations %s reach the work-webhook process only", workWebhook.ConfigurationName)
			g.Expect(reg.caBundle).NotTo(Equal(work.caBundle), "each process trusts its own CA")
			for kind, webhooks := range reg.groups {
				for name, groups := range webhooks {
					g.Expect(groups.Has(workGroup)).To(BeFalse(), "%s webhook %s of %s matches no work", kind, name, webhook.DefaultConfigurationName)
				}
			}
			for kind, webhooks := range work.groups {
				for name, groups := range webhooks {
					switch name {
					case "probe.webhook.flotilla.dev":
					case overridewebhook.Name: // overrides shape the works of ManifestWorkReplicaSets
						g.Expect(groups).To(Equal(sets.New("flotilla.dev")), "%s webhook %s of %s matches overrides only", kind, name, workWebhook.ConfigurationName)
					default:
						g.Expect(groups).To(Equal(sets.New(workGroup)), "%s webhook %s of %s matches work only", kind, name, workWebhook.ConfigurationName)
					}
				}
			}
			g.Expect(reg.groups["validating"]).To(HaveKeyWithValue(admission.Name, HaveKey(clusterGroup)), "the first process registers the cluster policies")
			g.Expect(work.groups["validating"]).To(HaveKey(admission.Name), "the work-webhook process registers the work policies")
			g.Expect(work.groups["validating"]).To(HaveKey(manifestwork.Name), "the work-webhook process validates ManifestWorks")
			g.Expect(work.groups["validating"]).To(HaveKey(overridewebhook.Name), "the work-webhook process validates ManifestWorkReplicaSetOverrides")
			g.Expect(work.groups["mutating"]).To(HaveKey(manifestwork.FinalizerName), "the work-webhook process adds the finalizer")

			// The user policies reached each process's rules.
			vwcs := env.HubKube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
			for name, resource := range map[string]string{webhook.DefaultConfigurationName: "placements", workWebhook.ConfigurationName: "manifestworks"} {
				vwc, err := vwcs.Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(deletes(vwc, resource)).To(BeTrue(), "%s sends %s deletes to the policies", name, resource)
			}
			for _, name := range []string{webhook.DefaultSecretName, workWebhook.SecretName} {
				g.Expect(env.HubClient.Get(ctx, client.ObjectKey{Namespace: webhook.DefaultNamespace, Name: name}, &corev1.Secret{})).To(Succeed(), "Secret %s", name)
			}
		}
		Eventually(ownsItsOwn).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "each process's configurations reach it, with the policies of its groups")
		By("both processes resync on the policy change and after; neither takes the other's configurations")
		Consistently(ownsItsOwn).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})

// deletes says the policy webhook of vwc is sent deletes of resource.
func deletes(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, resource string) bool {
	for _, w := range vwc.Webhooks {
		if w.Name != admission.Name {
			continue
		}
		for _, r := range w.Rules {
			if slices.Contains(r.Resources, resource) && slices.Contains(r.Operations, admissionregistrationv1.Delete) {
				return true
			}
		}
	}
	return false
}

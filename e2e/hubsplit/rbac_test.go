package hubsplit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/install"
	hubadmin "github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/registration/bootstrap"
	"github.com/flotilla-dev/flotilla/hub/webhook"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// The chart's names for the split hub (values clusterManager.name and the release namespace).
const (
	clusterManager = "cluster-manager"
	hubNamespace   = install.HubNamespace
)

// serviceAccountOf is the ServiceAccount the chart gives component c.
func serviceAccountOf(c string) string {
	if c == manager.AddonManager {
		return "addon-manager-controller-sa"
	}
	return c + "-sa"
}

// userOf is the user name of component c's ServiceAccount, and its groups.
func userOf(c string) (string, []string) {
	return "system:serviceaccount:" + hubNamespace + ":" + serviceAccountOf(c),
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + hubNamespace, "system:authenticated"}
}

// configAs is the hub's admin config impersonating component c's ServiceAccount.
func configAs(c string) *rest.Config { return impersonating(env.Fleet.Hub.Config, c) }

// impersonating is admin impersonating component c's ServiceAccount.
func impersonating(admin *rest.Config, c string) *rest.Config {
	cfg := rest.CopyConfig(admin)
	user, groups := userOf(c)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// applyComponentRBAC renders the hub chart with topology Split and applies what it renders
// beyond the Single topology's objects of the RBAC kinds: the components' ServiceAccounts,
// roles and bindings.
func applyComponentRBAC(ctx context.Context, admin client.Client) {
	GinkgoHelper()
	single, err := install.Render(install.HubChart, install.HubChart, hubNamespace, map[string]any{"render": "components", "topology": "Single"})
	Expect(err).NotTo(HaveOccurred())
	split, err := install.Render(install.HubChart, install.HubChart, hubNamespace, map[string]any{"render": "components", "topology": "Split"})
	Expect(err).NotTo(HaveOccurred())
	key := func(kind, ns, name string) string { return kind + " " + ns + "/" + name }
	singles := map[string]bool{}
	for _, o := range single {
		singles[key(o.GetKind(), o.GetNamespace(), o.GetName())] = true
	}
	applied := 0
	for _, o := range split {
		k := key(o.GetKind(), o.GetNamespace(), o.GetName())
		if singles[k] || !slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind()) {
			continue
		}
		Expect(admin.Patch(ctx, o, client.Apply, client.FieldOwner("hubsplit-test"), client.ForceOwnership)).To(Succeed(), "applying %s", k)
		applied++
	}
	// Per component: ServiceAccount, ClusterRole and binding, at least one Role and binding.
	Expect(applied).To(BeNumerically(">=", 5*len(manager.ComponentNames())), "the Split topology renders every component's identity")
}

// access is one request a component's identity makes, or must not be allowed to make.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	where := a.namespace
	if a.name != "" {
		where += "/" + a.name
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", a.verb, r, where))
}

// res is resource (with an optional /subresource) of group.
func res(verb, group, resource, namespace, name string) access {
	r, sub, _ := strings.Cut(resource, "/")
	return access{verb: verb, group: group, resource: r, subresource: sub, namespace: namespace, name: name}
}

const (
	clusterG   = "cluster.open-cluster-management.io"
	workG      = "work.open-cluster-management.io"
	addonG     = "addon.open-cluster-management.io"
	flotillaG  = "flotilla.dev"
	rbacG      = "rbac.authorization.k8s.io"
	coordG     = "coordination.k8s.io"
	admissionG = "admissionregistration.k8s.io"
	certG      = "certificates.k8s.io"
	flowG      = "flowcontrol.apiserver.k8s.io"
)

// watch is get, list and watch of resource everywhere.
func watch(group, resource string) []access {
	return []access{res("get", group, resource, "", ""), res("list", group, resource, "", ""), res("watch", group, resource, "", "")}
}

// common is what every component does: Events, its FlowSchema.
func common(c string) []access {
	return []access{
		res("create", "", "events", "cluster1", ""), res("patch", "events.k8s.io", "events", "cluster1", ""),
		res("create", flowG, "flowschemas", "", "flotilla-hub-"+c), res("patch", flowG, "flowschemas", "", "flotilla-hub-"+c),
		res("get", "", "namespaces", "", hubNamespace),
		res("get", "apiextensions.k8s.io", "customresourcedefinitions", "", "manifestworks.work.open-cluster-management.io"),
		res("watch", "apiextensions.k8s.io", "customresourcedefinitions", "", ""),
	}
}

// elects is leader election on Lease <cm>-<c>-lock.
func elects(c string) []access {
	lock := clusterManager + "-" + c + "-lock"
	return []access{res("create", coordG, "leases", hubNamespace, ""), res("get", coordG, "leases", hubNamespace, lock), res("update", coordG, "leases", hubNamespace, lock)}
}

// servesWebhooks is a webhook server writing configuration and Secret name.
func servesWebhooks(name string) []access {
	out := []access{
		res("create", "", "secrets", hubNamespace, ""), res("update", "", "secrets", hubNamespace, name+"-serving-cert"),
		res("get", "", "secrets", hubNamespace, name+"-serving-cert"), res("watch", "", "secrets", hubNamespace, name+"-serving-cert"),
		res("create", "", "configmaps", hubNamespace, ""),
	}
	for _, kind := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		for _, verb := range []string{"get", "list", "watch", "create", "patch", "delete"} {
			out = append(out, res(verb, admissionG, kind, "", name))
		}
	}
	return out
}

// loadsPolicies is the policy admission: ConfigMaps, SubjectAccessReviews, RBAC changes, clusters.
func loadsPolicies() []access {
	out := append(watch("", "configmaps"), res("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
		res("update", "", "configmaps", hubNamespace, "flotilla-policies-last-good"), res("create", "", "configmaps", hubNamespace, ""))
	for _, r := range []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"} {
		out = append(out, res("list", rbacG, r, "", ""), res("watch", rbacG, r, "", ""))
	}
	return append(out, watch(clusterG, "managedclusters")...)
}

// loadsPlugins is the WasmPlugin controller.
func loadsPlugins() []access {
	return append(append(watch(flotillaG, "wasmplugins"), watch("", "configmaps")...), res("update", flotillaG, "wasmplugins/status", "", ""))
}

// needs is, per component, what its reconcilers, informers, webhooks and leader election do
// (hub/manager's setup and Prepare per component).
var needs = map[string][]access{
	manager.RegistrationController: concat(common(manager.RegistrationController), elects(manager.RegistrationController), loadsPlugins(),
		[]access{
			res("create", "apiextensions.k8s.io", "customresourcedefinitions", "", ""), res("patch", "apiextensions.k8s.io", "customresourcedefinitions", "", "managedclusters.cluster.open-cluster-management.io"),
			res("create", "", "namespaces", "", ""), res("delete", "", "namespaces", "", "cluster1"),
			res("create", "", "serviceaccounts", "open-cluster-management", ""), res("create", "", "serviceaccounts/token", "open-cluster-management", "cluster-bootstrap"),
			res("create", rbacG, "clusterroles", "", ""), res("escalate", rbacG, "clusterroles", "", ""), res("bind", rbacG, "clusterroles", "", ""),
			res("create", rbacG, "rolebindings", "cluster1", ""), res("delete", rbacG, "clusterrolebindings", "", "x"),
			res("list", coordG, "leases", "", ""), res("watch", coordG, "leases", "", ""), res("create", coordG, "leases", "cluster1", ""),
			res("list", certG, "certificatesigningrequests", "", ""), res("watch", certG, "certificatesigningrequests", "", ""),
			res("update", certG, "certificatesigningrequests/approval", "", "csr1"), res("deletecollection", certG, "certificatesigningrequests", "", ""),
			res("approve", certG, "signers", "", "kubernetes.io/kube-apiserver-client"), res("approve", certG, "signers", "", "example.com/addon-signer"),
			res("create", flowG, "flowschemas", "", ""), res("create", flowG, "prioritylevelconfigurations", "", ""),
			res("patch", clusterG, "managedclusters", "", "cluster1"), res("update", clusterG, "managedclusters/status", "", "cluster1"),
			res("create", clusterG, "managedclustersets/join", "", "default"), res("update", "register.open-cluster-management.io", "managedclusters/accept", "", "cluster1"),
			res("create", clusterG, "managedclustersets", "", ""), res("update", clusterG, "managedclustersets/status", "", "default"),
			res("update", clusterG, "managedclustersetbindings/status", "ns1", "default"),
			res("list", workG, "manifestworks", "", ""), res("delete", workG, "manifestworks", "cluster1", "w"), res("patch", workG, "manifestworks", "cluster1", "w"),
			res("list", addonG, "managedclusteraddons", "", ""), res("watch", addonG, "managedclusteraddons", "", ""),
			res("create", flotillaG, "wasmplugins", "", ""), res("patch", flotillaG, "wasmplugins", "", "csr-renewal"),
			res("create", "", "configmaps", hubNamespace, ""), res("patch", "", "configmaps", hubNamespace, "flotilla-plugin-csr-renewal"),
			res("delete", "", "configmaps", hubNamespace, "flotilla-plugin-csr-autoapprove"),
		}),
	manager.RegistrationWebhook: concat(common(manager.RegistrationWebhook), servesWebhooks(clusterManager+"-registration-webhook"), loadsPolicies(),
		[]access{res("delete", admissionG, "validatingadmissionpolicies", "", "managedclusters-accept.flotilla.dev")}),
	manager.WorkWebhook: concat(common(manager.WorkWebhook), servesWebhooks(clusterManager+"-work-webhook"), loadsPolicies()),
	manager.WorkController: concat(common(manager.WorkController), elects(manager.WorkController), loadsPlugins(), watch(workG, "manifestworks"), watch(workG, "manifestworkreplicasets"),
		watch(clusterG, "managedclusters"), watch(clusterG, "placements"), watch(clusterG, "placementdecisions"),
		watch(clusterG, "managedclustersets"), watch(flotillaG, "manifestworkreplicasetoverrides"),
		[]access{
			res("update", flotillaG, "manifestworkreplicasetoverrides/status", "ns1", "o"),
			res("update", workG, "manifestworks/status", "cluster1", "w"), res("create", workG, "manifestworks", "cluster1", ""),
			res("update", workG, "manifestworks", "cluster1", "w"), res("delete", workG, "manifestworks", "cluster1", "w"),
			res("update", workG, "manifestworkreplicasets/status", "ns1", "r"), res("update", workG, "manifestworkreplicasets/finalizers", "ns1", "r"),
			res("create", "apps", "controllerrevisions", "ns1", ""), res("delete", "apps", "controllerrevisions", "ns1", "r-1"),
			res("execute-as", workG, "manifestworks", "cluster1", "system:serviceaccount:apps:deployer"),
		}),
	manager.PlacementController: concat(common(manager.PlacementController), elects(manager.PlacementController), loadsPlugins(),
		watch(clusterG, "placements"), watch(clusterG, "placementdecisions"), watch(clusterG, "managedclusters"), watch(clusterG, "managedclustersets"),
		watch(clusterG, "managedclustersetbindings"), watch(clusterG, "addonplacementscores"),
		[]access{
			res("update", clusterG, "placements/status", "ns1", "p"), res("create", clusterG, "placementdecisions", "ns1", ""),
			res("update", clusterG, "placementdecisions/status", "ns1", "p-decision-1"), res("delete", clusterG, "placementdecisions", "ns1", "p-decision-2"),
			res("create", "authentication.k8s.io", "tokenreviews", "", ""), res("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
		}),
	manager.AddonManager: concat(common(manager.AddonManager), elects(manager.AddonManager), loadsPlugins(), servesWebhooks(clusterManager+"-addon-webhook"),
		watch(addonG, "managedclusteraddons"), watch(clusterG, "placementdecisions"), watch(clusterG, "managedclusters"),
		[]access{
			res("create", addonG, "managedclusteraddons", "cluster1", ""), res("update", addonG, "managedclusteraddons/status", "cluster1", "a"),
			res("update", addonG, "clustermanagementaddons/status", "", "a"), res("create", workG, "manifestworks", "cluster1", ""),
			res("delete", workG, "manifestworks", "cluster1", "addon-a-deploy-0"), res("patch", "apiextensions.k8s.io", "customresourcedefinitions", "", "managedclusteraddons.addon.open-cluster-management.io"),
			res("create", "apiregistration.k8s.io", "apiservices", "", ""), res("create", "", "services", hubNamespace, ""),
			res("create", "authentication.k8s.io", "tokenreviews", "", ""), res("create", "authorization.k8s.io", "subjectaccessreviews", "", ""),
			res("create", "authentication.open-cluster-management.io", "managedserviceaccounts", "cluster1", ""),
			res("watch", certG, "certificatesigningrequests", "", ""), res("update", certG, "certificatesigningrequests/status", "", "csr1"),
			res("sign", certG, "signers", "", "example.com/addon-signer"),
			res("create", clusterG, "placements", "open-cluster-management-addon", ""), res("create", clusterG, "managedclustersets/bind", "", "global"), res("create", clusterG, "managedclustersetbindings", "open-cluster-management-addon", ""),
		}),
}

// lacks is, per component, a sample of what other components do and it must not.
var lacks = map[string][]access{
	manager.RegistrationController: {
		res("create", workG, "manifestworks", "cluster1", ""), res("create", clusterG, "placementdecisions", "ns1", ""),
		res("patch", admissionG, "validatingwebhookconfigurations", "", clusterManager+"-work-webhook"), res("create", "apiregistration.k8s.io", "apiservices", "", ""),
	},
	manager.RegistrationWebhook: {
		res("patch", admissionG, "validatingwebhookconfigurations", "", clusterManager+"-work-webhook"), res("get", "", "secrets", hubNamespace, clusterManager+"-work-webhook-serving-cert"),
		res("create", clusterG, "managedclusters", "", ""), res("update", clusterG, "managedclusters/status", "", "cluster1"),
		res("create", coordG, "leases", hubNamespace, ""), res("create", "", "namespaces", "", ""), res("approve", certG, "signers", "", "kubernetes.io/kube-apiserver-client"),
	},
	manager.WorkWebhook: {
		res("create", clusterG, "managedclusters", "", ""), res("patch", clusterG, "managedclusters", "", "cluster1"), res("update", clusterG, "managedclusters/status", "", "cluster1"),
		res("patch", admissionG, "validatingwebhookconfigurations", "", clusterManager+"-registration-webhook"),
		res("get", "", "secrets", hubNamespace, clusterManager+"-registration-webhook-serving-cert"),
		res("update", workG, "manifestworks/status", "cluster1", "w"), res("create", coordG, "leases", hubNamespace, ""),
	},
	manager.WorkController: {
		res("update", certG, "certificatesigningrequests/approval", "", "csr1"), res("create", clusterG, "placementdecisions", "ns1", ""),
		res("patch", clusterG, "managedclusters", "", "cluster1"), res("create", "", "namespaces", "", ""),
		res("patch", admissionG, "validatingwebhookconfigurations", "", clusterManager+"-work-webhook"),
	},
	manager.PlacementController: {
		res("update", certG, "certificatesigningrequests/approval", "", "csr1"), res("approve", certG, "signers", "", "kubernetes.io/kube-apiserver-client"),
		res("create", workG, "manifestworks", "cluster1", ""), res("patch", clusterG, "managedclusters", "", "cluster1"),
		res("create", rbacG, "clusterroles", "", ""), res("get", "", "secrets", hubNamespace, "any"), res("create", "", "namespaces", "", ""),
		res("get", coordG, "leases", hubNamespace, clusterManager+"-registration-controller-lock"),
		res("create", clusterG, "managedclustersets/join", "", "default"), res("execute-as", workG, "manifestworks", "cluster1", "system:serviceaccount:apps:deployer"),
	},
	manager.AddonManager: {
		res("update", certG, "certificatesigningrequests/approval", "", "csr1"), res("create", clusterG, "placementdecisions", "ns1", ""),
		res("update", clusterG, "managedclusters/status", "", "cluster1"), res("patch", admissionG, "validatingwebhookconfigurations", "", clusterManager+"-work-webhook"),
	},
}

func concat(parts ...[]access) []access { return slices.Concat(parts...) }

// allowed asks the API server whether component c's ServiceAccount may do a.
func allowed(ctx context.Context, c string, a access) bool {
	GinkgoHelper()
	user, groups := userOf(c)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: a.name,
		},
	}}
	got, err := env.HubKube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "SubjectAccessReview for %s: %s", c, a)
	return got.Status.Allowed
}

var _ = Describe("the split hub's RBAC (chart topology Split)", func() {
	It("lets each component's ServiceAccount do what its code does, and not a sample of what the others do", func(ctx SpecContext) {
		for _, c := range manager.ComponentNames() {
			Expect(needs).To(HaveKey(c))
			Expect(lacks).To(HaveKey(c))
			var missing, extra []string
			for _, a := range needs[c] {
				if !allowed(ctx, c, a) {
					missing = append(missing, a.String())
				}
			}
			for _, a := range lacks[c] {
				if allowed(ctx, c, a) {
					extra = append(extra, a.String())
				}
			}
			Expect(missing).To(BeEmpty(), "%s (ServiceAccount %s) is refused what it does", c, serviceAccountOf(c))
			Expect(extra).To(BeEmpty(), "%s (ServiceAccount %s) may do what only other components do", c, serviceAccountOf(c))
		}
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("the registration components as their ServiceAccounts", func() {
	It("install the hub and register, approve and join a cluster with only the chart's RBAC", func(ctx SpecContext) {
		By("a hub API server of its own with the chart's CRDs and RBAC")
		cp, err := environment.StartControlPlane(suiteCtx, environment.ControlPlaneOptions{Name: "registration-hub", AllCRDs: true})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(SpecContext) { Expect(cp.Stop()).To(Succeed()) }, NodeTimeout(time.Minute))
		admin, err := client.New(cp.Config, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubNamespace}})).To(Succeed())
		applyComponentRBAC(ctx, admin)

		By("the registration controller (it applies the CRDs, makes the bootstrap identity) and webhook, each as its ServiceAccount")
		controller := asComponent(manager.RegistrationController)
		controller.Config = impersonating(cp.Config, manager.RegistrationController)
		start("solo-"+manager.RegistrationController, controller)
		hook := asComponent(manager.RegistrationWebhook)
		hook.Config = impersonating(cp.Config, manager.RegistrationWebhook)
		hook.Webhook = webhook.Options{ConfigurationName: clusterManager + "-registration-webhook", SecretName: clusterManager + "-registration-webhook-serving-cert"}
		Eventually(start("solo-"+manager.RegistrationWebhook, hook).hub.Webhooks().Ready()).Should(BeClosed(), "the registration-webhook process's webhooks serve")

		By("a klusterlet bootstraps with the identity the registration controller made; accepted, its cluster joins")
		var kubeconfig []byte
		Eventually(func() (err error) {
			kubeconfig, err = bootstrap.Kubeconfig(ctx, cp.Config, time.Hour)
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "the bootstrap identity exists")
		k := env.StartKlusterlet(klusterlet.Options{Registration: registration.Config{
			ClusterName: "solo", ManagedConfig: cp.Config, AgentNamespace: "agent-solo", BootstrapKubeconfig: kubeconfig,
		}})
		DeferCleanup(k.Stop)
		kube := kubernetes.NewForConfigOrDie(cp.Config)
		Eventually(func() error {
			_, err := hubadmin.Accept(ctx, admin, kube, []string{"solo"})
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "cluster solo registers and is accepted")
		Eventually(func(g Gomega) {
			mc := &clusterv1.ManagedCluster{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Name: "solo"}, mc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionJoined)).To(BeTrue())
			// Through the join gate, as the registration controller's ServiceAccount.
			g.Expect(mc.Labels).To(HaveKeyWithValue(clusterv1beta2.ClusterSetLabel, clusterv1beta2.DefaultClusterSetName))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "cluster solo is Joined (its CSR approved, its namespace and RBAC made) and in the default set")
	}, SpecTimeout(5*time.Minute))
})

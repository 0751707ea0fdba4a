// Package builtin is the hub side of the add-ons whose agents are built into the klusterlet
// (klusterlet/addon Config.Builtins): cluster-proxy, managed-serviceaccount and
// cluster-gateway. Each is data here (Addon): its ClusterManagementAddOn, created only when
// absent (a user's own, say the seeds' AddOnTemplate add-on managed-serviceaccount, is never
// overwritten), its agent's default install namespace, its registrations, its hub
// permissions and Lease health. Reconciler writes what OCM's add-on manager of each add-on
// would write on its ManagedClusterAddOns (status.namespace, registrations, healthCheck,
// addOnMeta, relatedObjects) and marks them with Label, which tells the klusterlet to run the
// built-in agent. When the ClusterManagementAddOn names a template (addontemplates or
// wasmplugins), the template add-on wins: Reconciler stands down (removes the label and its
// status fields) and the template's agent is deployed as any other.
//
// Hub permissions go through the add-on manager's registration reconciler
// (hub/addon/registration.Reconciler, via hub/addon Manager.permissions): Permissions binds
// each built-in's ClusterRole (ClusterRoles, applied by Reconciler) to the add-on's agents of
// the cluster, in the cluster namespace.
package builtin

import (
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/clusterproxy"
	addonregistration "github.com/flotilla-dev/flotilla/hub/addon/registration"
)

// Label ("true") marks the ManagedClusterAddOns whose agent the klusterlet runs built in
// (klusterlet/addon.BuiltinLabel is the same key).
const Label = "addon.flotilla.dev/builtin"

// Names of the built-in add-ons.
const (
	ClusterProxy          = "cluster-proxy"
	ManagedServiceAccount = authv1beta1.AddonName
	ClusterGateway        = "cluster-gateway"
)

// Names reports the built-in add-ons, in a stable order.
func Names() []string { return []string{ClusterProxy, ManagedServiceAccount, ClusterGateway} }

// TunnelClusterRole lets a cluster-proxy agent open its tunnel through the hub API server
// (proxy.flotilla.dev tunnels/proxy, named cluster-proxy), bound in the cluster namespace.
const TunnelClusterRole = "open-cluster-management:cluster-proxy:tunnel"

// MSAAgentClusterRole holds managed-serviceaccount's agent rules, bound in the cluster
// namespace.
const MSAAgentClusterRole = "open-cluster-management:managed-serviceaccount:addon-agent"

// genericNamespace is OCM's default install namespace of add-on agents, which `flotilla addon
// enable` and the AddOnDeploymentConfig CRD's default write: it does not override a
// built-in's own default.
const genericNamespace = "open-cluster-management-agent-addon"

// Addon is one built-in add-on.
type Addon struct {
	Name string
	// Namespace is the agent's default install namespace on managed clusters.
	Namespace string
	// Agent is the agent name of its hub identity; empty when it registers none.
	Agent string
	// ClusterRoles are applied on the hub; Permissions binds them per cluster.
	ClusterRoles []*rbacv1.ClusterRole
	// SupportedConfigs of its ClusterManagementAddOn.
	SupportedConfigs []addonv1alpha1.ConfigMeta
}

// Lookup returns the built-in add-on name, or false.
func Lookup(name string) (Addon, bool) {
	switch name {
	case ClusterProxy:
		return Addon{
			Name: ClusterProxy, Namespace: "open-cluster-management-cluster-proxy", Agent: "proxy-agent",
			ClusterRoles: []*rbacv1.ClusterRole{clusterRole(ClusterProxy, TunnelClusterRole, rbacv1.PolicyRule{
				APIGroups: []string{"proxy.flotilla.dev"}, Resources: []string{"tunnels/proxy"},
				ResourceNames: []string{ClusterProxy}, Verbs: []string{"create", "get"},
			}, rbacv1.PolicyRule{
				// The Services the hub lists for the cluster (from the
				// ManagedProxyServiceResolvers): this one ConfigMap, not the resolvers and sets.
				APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{clusterproxy.ServicesConfigMapName}, Verbs: []string{"get", "list", "watch"},
			})},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "proxy.open-cluster-management.io", Resource: "managedproxyconfigurations"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: ClusterProxy}},
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"}},
			},
		}, true
	case ManagedServiceAccount:
		return Addon{
			Name: ManagedServiceAccount, Namespace: authv1beta1.AgentInstallNamespace, Agent: authv1beta1.AgentName,
			// Upstream's agent Role, plus patch on secrets: the agent writes its token
			// Secrets with server-side apply.
			ClusterRoles: []*rbacv1.ClusterRole{clusterRole(ManagedServiceAccount, MSAAgentClusterRole,
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
				rbacv1.PolicyRule{APIGroups: []string{authv1beta1.GroupVersion.Group}, Resources: []string{"managedserviceaccounts"}, Verbs: []string{"get", "list", "watch"}},
				rbacv1.PolicyRule{APIGroups: []string{authv1beta1.GroupVersion.Group}, Resources: []string{"managedserviceaccounts/status"}, Verbs: []string{"get", "update", "patch"}},
			)},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"}},
			},
		}, true
	case ClusterGateway:
		return Addon{
			Name: ClusterGateway, Namespace: "open-cluster-management-cluster-gateway",
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupVersion.Group, Resource: "addondeploymentconfigs"}},
			},
		}, true
	}
	return Addon{}, false
}

func clusterRole(addon, name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{addonv1alpha1.AddonLabelKey: addon}},
		Rules:      rules,
	}
}

// ClusterManagementAddOn is the add-on's ClusterManagementAddOn as the hub creates it when
// absent: the addon-manager lifecycle (the hub's install and configuration reconcilers serve
// it; no works are rendered), upstream's display name and supported configs. It is installed
// by hand (flotilla addon enable) until a user gives it placements or, with installAll, on
// every cluster: placement InstallAllPlacement (as upstream's charts' agentInstallAll).
func (a Addon) ClusterManagementAddOn(installAll bool) *addonv1alpha1.ClusterManagementAddOn {
	strategy := addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}
	if installAll {
		strategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef:    addonv1alpha1.PlacementRef{Namespace: InstallAllNamespace, Name: InstallAllPlacement},
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
			}}}
	}
	return &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue,
		}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta:        addonv1alpha1.AddOnMeta{DisplayName: a.Name, Description: a.Name},
			SupportedConfigs: slices.Clone(a.SupportedConfigs),
			InstallStrategy:  strategy,
		},
	}
}

// The Placement the built-ins' ClusterManagementAddOns install over with install-all, and
// its namespace, as in upstream's charts (agentInstallAll) and OCM's docs.
const (
	InstallAllNamespace = "open-cluster-management-addon"
	InstallAllPlacement = clusterv1beta2.GlobalClusterSetName
)

// InstallAllObjects are what install-all needs, created when absent: the namespace, the
// ManagedClusterSet global (every cluster; the DefaultClusterSet gate keeps it too) bound
// there, and the Placement global over it, which tolerates unreachable and unavailable
// clusters (as upstream's: operator Equal, the taints' empty value) so their add-ons are not
// uninstalled while they are away.
func InstallAllObjects() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: InstallAllNamespace}},
		&clusterv1beta2.ManagedClusterSet{
			ObjectMeta: metav1.ObjectMeta{Name: clusterv1beta2.GlobalClusterSetName},
			Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
				SelectorType: clusterv1beta2.LabelSelector, LabelSelector: &metav1.LabelSelector{}}},
		},
		&clusterv1beta2.ManagedClusterSetBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: InstallAllNamespace, Name: clusterv1beta2.GlobalClusterSetName},
			Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: clusterv1beta2.GlobalClusterSetName},
		},
		&clusterv1beta1.Placement{
			ObjectMeta: metav1.ObjectMeta{Namespace: InstallAllNamespace, Name: InstallAllPlacement},
			Spec: clusterv1beta1.PlacementSpec{
				ClusterSets: []string{clusterv1beta2.GlobalClusterSetName},
				Tolerations: []clusterv1beta1.Toleration{
					{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpEqual},
					{Key: clusterv1.ManagedClusterTaintUnavailable, Operator: clusterv1beta1.TolerationOpEqual},
				},
			},
		},
	}
}

// Registrations are the add-on's status.registrations on cluster: a hub client certificate
// of the default subject (which the csr-addon plugin approves), none for an add-on without
// an agent identity.
func (a Addon) Registrations(cluster string) []addonv1alpha1.RegistrationConfig {
	if a.Agent == "" {
		return nil
	}
	return []addonv1alpha1.RegistrationConfig{{
		SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Subject: addonv1alpha1.Subject{User: addonregistration.DefaultUser(cluster, a.Name, a.Agent),
			Groups: addonregistration.DefaultGroups(cluster, a.Name)},
	}}
}

// Permissions are the add-on's hub permissions: each ClusterRole bound in the cluster
// namespace to the add-on's agents of the cluster.
func (a Addon) Permissions() []addonv1alpha1.HubPermissionConfig {
	out := make([]addonv1alpha1.HubPermissionConfig, 0, len(a.ClusterRoles))
	for _, cr := range a.ClusterRoles {
		out = append(out, addonv1alpha1.HubPermissionConfig{Type: addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: cr.Name}})
	}
	return out
}

// InstallNamespace decides the agent's namespace (design 23, Q2): the AddOnDeploymentConfig's
// agentInstallNamespace, then spec.installNamespace, then the add-on's default; OCM's generic
// default does not count as a choice (flotilla addon enable and the AddOnDeploymentConfig
// CRD write it), so the seeds' namespaces hold.
func (a Addon) InstallNamespace(adcNamespace, specNamespace string) string {
	for _, ns := range []string{adcNamespace, specNamespace} {
		if ns != "" && ns != genericNamespace {
			return ns
		}
	}
	return a.Namespace
}

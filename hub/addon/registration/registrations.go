// Package registration is the hub side of add-on agent registration: the default
// registrations (signer and subject) of a template add-on's agent, which the add-on manager
// writes into ManagedClusterAddOn status.registrations and the klusterlet turns into CSRs; and
// the hub permissions (RoleBindings) a template's KubeClient registrations declare, kept in
// step with each ManagedClusterAddOn by Reconciler, which reports them in the
// RegistrationApplied condition. The CSRs themselves are approved by the CSRApproval plugins
// (hub/registration/csr, the built-in csr-addon plugin). Kubernetes signs only its own
// kubernetes.io signers: the approved CSRs of a template's CustomSigner registrations are signed
// by Signer, with the CA in the registration's signingCA Secret, into status.certificate.
//
// Identities and names follow OCM's add-on framework and template add-ons
// (open-cluster-management-io/addon-framework pkg/agent, ocm pkg/addon/templateagent), so
// OCM add-on agents work against a Flotilla hub unchanged.
package registration

import (
	certificatesv1 "k8s.io/api/certificates/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
)

const identityPrefix = "system:open-cluster-management:"

// AuthenticatedGroup is the last of OCM's default add-on groups.
const AuthenticatedGroup = "system:authenticated"

// AgentName is the agent part of a template add-on agent's default user: <addon>-agent, as
// OCM's template add-on manager names it.
func AgentName(addon string) string { return addon + "-agent" }

// ClusterAddonGroup is the group of an add-on's agents on one cluster:
// system:open-cluster-management:cluster:<cluster>:addon:<addon>. Hub permissions are bound to it.
func ClusterAddonGroup(cluster, addon string) string {
	return identityPrefix + "cluster:" + cluster + ":addon:" + addon
}

// AddonGroup is the group of an add-on's agents on every cluster:
// system:open-cluster-management:addon:<addon>.
func AddonGroup(addon string) string { return identityPrefix + "addon:" + addon }

// DefaultUser is OCM's default user of an add-on agent:
// system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<agent>.
func DefaultUser(cluster, addon, agent string) string {
	return ClusterAddonGroup(cluster, addon) + ":agent:" + agent
}

// DefaultGroups is OCM's default groups of an add-on agent: the per-cluster add-on group, the
// add-on group and system:authenticated.
func DefaultGroups(cluster, addon string) []string {
	return []string{ClusterAddonGroup(cluster, addon), AddonGroup(addon), AuthenticatedGroup}
}

// Registrations returns the status.registrations of template add-on addon on cluster for the
// template's spec.registration, as OCM's template add-on manager computes them:
//
//   - KubeClient: signer kubernetes.io/kube-apiserver-client, user
//     DefaultUser(cluster, addon, AgentName(addon)) and DefaultGroups(cluster, addon);
//   - CustomSigner: its signerName, with its subject when it sets one (user, groups,
//     organization units), else the same default user and groups. A CustomSigner
//     registration without customSigner is skipped.
//
// Unknown types are skipped, and so is a second registration for a signer already listed
// (signer names must be unique). It returns nil when nothing is left.
func Registrations(cluster, addon string, tmpl []addonv1alpha1.RegistrationSpec) []addonv1alpha1.RegistrationConfig {
	var out []addonv1alpha1.RegistrationConfig
	seen := map[string]bool{}
	add := func(c addonv1alpha1.RegistrationConfig) {
		if !seen[c.SignerName] {
			seen[c.SignerName] = true
			out = append(out, c)
		}
	}
	def := addonv1alpha1.Subject{User: DefaultUser(cluster, addon, AgentName(addon)), Groups: DefaultGroups(cluster, addon)}
	for _, reg := range tmpl {
		switch reg.Type {
		case addonv1alpha1.RegistrationTypeKubeClient:
			add(addonv1alpha1.RegistrationConfig{SignerName: certificatesv1.KubeAPIServerClientSignerName, Subject: *def.DeepCopy()})
		case addonv1alpha1.RegistrationTypeCustomSigner:
			if reg.CustomSigner == nil {
				continue
			}
			c := addonv1alpha1.RegistrationConfig{SignerName: reg.CustomSigner.SignerName, Subject: *def.DeepCopy()}
			if s := reg.CustomSigner.Subject; s != nil {
				c.Subject = *s.DeepCopy()
			}
			add(c)
		}
	}
	return out
}

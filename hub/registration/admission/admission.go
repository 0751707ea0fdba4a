// Package admission installs the ValidatingAdmissionPolicies that carry the permission checks
// OCM's validating webhooks make with SubjectAccessReviews. A CEL policy with an authorizer
// check does the same in the API server itself:
//
//   - spec.hubAcceptsClient: only a user allowed to "update" the virtual subresource
//     managedclusters/accept (group register.open-cluster-management.io) may accept a cluster,
//     on create as well as on update. Without it the bootstrap identity, which may create
//     ManagedClusters, could create one that is already accepted.
//   - ManagedClusterSetBinding: creating or updating a binding needs "create" on the virtual
//     subresource managedclustersets/bind (group cluster.open-cluster-management.io) of the set
//     named in spec.clusterSet, so that create on bindings in a namespace alone does not let a
//     user make any set's clusters available there.
//
// The authorizer asks the API server's own authorizers, so privileged identities (the hub's,
// system:masters) pass as they pass RBAC. Status writes go to the status subresource, which
// neither policy matches.
package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// PolicyName names both the spec.hubAcceptsClient policy and its binding.
const PolicyName = "managedclusters-accept.flotilla.dev"

// BindPolicyName names both the ManagedClusterSetBinding policy and its binding.
const BindPolicyName = "managedclustersetbindings-bind.flotilla.dev"

// acceptExpression allows a request unless it turns hubAcceptsClient from false/absent to true
// without permission on managedclusters/accept for that cluster.
const acceptExpression = `!has(object.spec.hubAcceptsClient) || !object.spec.hubAcceptsClient ||
(oldObject != null && has(oldObject.spec.hubAcceptsClient) && oldObject.spec.hubAcceptsClient) ||
authorizer.group('register.open-cluster-management.io').resource('managedclusters').subresource('accept').name(object.metadata.name).check('update').allowed()`

// bindExpression allows a request on a ManagedClusterSetBinding only when the requester may
// "create" managedclustersets/bind for the set it names.
const bindExpression = `!has(object.spec) || !has(object.spec.clusterSet) ||
authorizer.group('cluster.open-cluster-management.io').resource('managedclustersets').subresource('bind').name(object.spec.clusterSet).check('create').allowed()`

// bindMessageExpression names the set and the missing permission.
const bindMessageExpression = `'binding to ManagedClusterSet ' + object.spec.clusterSet + ' (spec.clusterSet) requires create permission on managedclustersets/bind (group cluster.open-cluster-management.io) for ' + object.spec.clusterSet`

// Policy returns the ValidatingAdmissionPolicy guarding spec.hubAcceptsClient.
func Policy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return policyFor(PolicyName, "managedclusters", admissionregistrationv1.Validation{
		Expression: acceptExpression,
		Message:    "setting spec.hubAcceptsClient to true requires update permission on managedclusters/accept (group register.open-cluster-management.io)",
		Reason:     ptr(metav1.StatusReasonForbidden),
	})
}

// BindPolicy returns the ValidatingAdmissionPolicy requiring managedclustersets/bind for the
// set a ManagedClusterSetBinding names.
func BindPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return policyFor(BindPolicyName, "managedclustersetbindings", admissionregistrationv1.Validation{
		Expression:        bindExpression,
		Message:           "binding to the ManagedClusterSet named in spec.clusterSet requires create permission on managedclustersets/bind (group cluster.open-cluster-management.io) for that set",
		MessageExpression: bindMessageExpression,
		Reason:            ptr(metav1.StatusReasonForbidden),
	})
}

// policyFor is a failing-closed policy named name applying v to creates and updates of
// resource (group cluster.open-cluster-management.io, not its subresources).
func policyFor(name, resource string, v admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"cluster.open-cluster-management.io"},
							APIVersions: []string{"*"},
							Resources:   []string{resource},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{v},
		},
	}
}

// Binding returns the binding that enforces Policy on every request.
func Binding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return bindingFor(PolicyName)
}

// BindBinding returns the binding that enforces BindPolicy on every request.
func BindBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return bindingFor(BindPolicyName)
}

func bindingFor(policy string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// Ensure installs or updates the policies and their bindings.
func Ensure(ctx context.Context, c client.Client) error {
	for _, p := range []struct {
		what string
		objs []client.Object
	}{
		{"spec.hubAcceptsClient", []client.Object{Policy(), Binding()}},
		{"ManagedClusterSetBinding", []client.Object{BindPolicy(), BindBinding()}},
	} {
		for _, o := range p.objs {
			if err := rbac.Apply(ctx, c, o); err != nil {
				return fmt.Errorf("admission policy for %s: %w", p.what, err)
			}
		}
	}
	return nil
}

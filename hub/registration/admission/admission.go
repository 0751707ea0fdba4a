// Package admission installs the ValidatingAdmissionPolicy that guards spec.hubAcceptsClient.
// OCM enforces this with a webhook; a CEL policy with an authorizer check does the same in the
// API server itself: only a user allowed to "update" the virtual subresource
// managedclusters/accept (group register.open-cluster-management.io) may accept a cluster, on
// create as well as on update. Without it the bootstrap identity, which may create
// ManagedClusters, could create one that is already accepted.
package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
)

// PolicyName names both the policy and its binding.
const PolicyName = "managedclusters-accept.flotilla.dev"

// acceptExpression allows a request unless it turns hubAcceptsClient from false/absent to true
// without permission on managedclusters/accept for that cluster.
const acceptExpression = `!has(object.spec.hubAcceptsClient) || !object.spec.hubAcceptsClient ||
(oldObject != null && has(oldObject.spec.hubAcceptsClient) && oldObject.spec.hubAcceptsClient) ||
authorizer.group('register.open-cluster-management.io').resource('managedclusters').subresource('accept').name(object.metadata.name).check('update').allowed()`

// Policy returns the ValidatingAdmissionPolicy.
func Policy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"cluster.open-cluster-management.io"},
							APIVersions: []string{"*"},
							Resources:   []string{"managedclusters"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: acceptExpression,
				Message:    "setting spec.hubAcceptsClient to true requires update permission on managedclusters/accept (group register.open-cluster-management.io)",
				Reason:     ptr(metav1.StatusReasonForbidden),
			}},
		},
	}
}

// Binding returns the binding that enforces Policy on every request.
func Binding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        PolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// Ensure installs or updates the policy and its binding.
func Ensure(ctx context.Context, c client.Client) error {
	for _, o := range []client.Object{Policy(), Binding()} {
		if err := rbac.Apply(ctx, c, o); err != nil {
			return fmt.Errorf("admission policy for spec.hubAcceptsClient: %w", err)
		}
	}
	return nil
}

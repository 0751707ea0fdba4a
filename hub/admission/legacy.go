package admission

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// legacyPolicies are the ValidatingAdmissionPolicies (and their bindings, of the same name)
// that guarded acceptance and binding before the Rego policies did; a hub upgraded from then
// removes them, so one place (policies/) holds every gate.
var legacyPolicies = []string{"managedclusters-accept.flotilla.dev", "managedclustersetbindings-bind.flotilla.dev"}

// RemoveLegacy deletes the legacy ValidatingAdmissionPolicies and bindings, if present.
func RemoveLegacy(ctx context.Context, c client.Client) error {
	for _, name := range legacyPolicies {
		for _, o := range []client.Object{
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}},
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}},
		} {
			if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("removing legacy admission policy %s: %w", name, err)
			}
		}
	}
	return nil
}

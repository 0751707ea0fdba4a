package manifestwork

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/registration/managedcluster"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// FinalizerPolicyName names the MutatingAdmissionPolicy and its binding that add the work's
// cleanup finalizer at create. It was the name of the mutating webhook that did so before.
const FinalizerPolicyName = "manifestworks.finalizer.flotilla.dev"

// noFinalizer lets through only the creates that lack the finalizer.
const noFinalizer = `!has(object.metadata.finalizers) || !('` + workv1.ManifestWorkFinalizer + `' in object.metadata.finalizers)`

// addFinalizer merges the finalizer into metadata.finalizers, a set: other finalizers stay.
const addFinalizer = `Object{metadata: Object.metadata{finalizers: ["` + workv1.ManifestWorkFinalizer + `"]}}`

// FinalizerPolicy is the MutatingAdmissionPolicy adding the work's cleanup finalizer
// (cluster.open-cluster-management.io/manifest-work-cleanup, OCM's) to a ManifestWork created
// without it. Its binding (FinalizerBinding) limits it to the namespaces of clusters whose
// agent is available.
func FinalizerPolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	ignore := admissionregistrationv1.Ignore
	namespaced := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: FinalizerPolicyName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{workv1.GroupVersion.Group},
						APIVersions: []string{workv1.GroupVersion.Version},
						Resources:   []string{"manifestworks"},
						Scope:       &namespaced,
					},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "no-finalizer", Expression: noFinalizer}},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: addFinalizer},
			}},
			// Without it the agent adds the finalizer: never fail a create for it.
			FailurePolicy: &ignore,
			// It only adds; nothing later takes the finalizer away again.
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// FinalizerBinding binds FinalizerPolicy to the cluster namespaces the hub labels
// managedcluster.AgentAvailableLabel: a work for a cluster without an available agent gets no
// finalizer, so deleting it does not wait for a cleanup nothing would do (as in OCM).
func FinalizerBinding() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: FinalizerPolicyName},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: FinalizerPolicyName,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{managedcluster.AgentAvailableLabel: "true"},
			}},
		},
	}
}

// InstallFinalizerPolicy server-side-applies FinalizerPolicy and FinalizerBinding (field manager
// webhook.FieldManager, as the webhook configurations) when the API
// server of kube serves admissionregistration.k8s.io/v1 mutatingadmissionpolicies (read from
// discovery, once: the hub calls it at start), and reports whether it did.
//
// The finalizer at create is only a shortcut: the work's agent adds it when missing, with a
// write of its own before applying anything. So where the API is not served (API servers
// before Kubernetes 1.36, or with it turned off) the hub adds none, and each work costs that
// one extra hub write, rather than keep a webhook for it: a webhook call is a round trip out
// of kube-apiserver on every work create (3 ms quiet, ~10 ms under load), the policy runs in
// process.
func InstallFinalizerPolicy(ctx context.Context, kube kubernetes.Interface) (bool, error) {
	gv := admissionregistrationv1.SchemeGroupVersion.String()
	resources, err := kube.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "mutatingadmissionpolicies" }) {
		return false, nil
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: webhook.FieldManager, Force: &force}
	policy, err := json.Marshal(FinalizerPolicy())
	if err != nil {
		return false, err
	}
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Patch(ctx, FinalizerPolicyName, types.ApplyPatchType, policy, opts); err != nil {
		return false, fmt.Errorf("applying MutatingAdmissionPolicy %s: %w", FinalizerPolicyName, err)
	}
	binding, err := json.Marshal(FinalizerBinding())
	if err != nil {
		return false, err
	}
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Patch(ctx, FinalizerPolicyName, types.ApplyPatchType, binding, opts); err != nil {
		return false, fmt.Errorf("applying MutatingAdmissionPolicyBinding %s: %w", FinalizerPolicyName, err)
	}
	return true, nil
}

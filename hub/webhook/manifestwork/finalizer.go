package manifestwork

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// FinalizerName is the mutating webhook's name in the configuration.
const FinalizerName = "manifestworks.finalizer.flotilla.dev"

// FinalizerPath is where the Server serves it.
const FinalizerPath = "/mutate/work.open-cluster-management.io/v1/manifestworks"

// Finalizer adds the work's cleanup finalizer (cluster.open-cluster-management.io/
// manifest-work-cleanup, OCM's) when a ManifestWork is created in the namespace of a cluster
// whose agent is available, which that agent would otherwise add with a write of its own
// before applying anything: one hub write per work fewer. It is only a shortcut: the agent
// still adds the finalizer when missing (a work created while this webhook was not in
// effect, its failure policy is Ignore), and a work for a cluster without an available agent
// gets none, so deleting it does not wait for a cleanup nothing would do (as in OCM).
type Finalizer struct {
	clusters client.Reader
}

var _ webhook.Validating = (*Finalizer)(nil)

// NewFinalizer returns the handler; clusters reads ManagedClusters (the hub's cache).
func NewFinalizer(clusters client.Reader) *Finalizer { return &Finalizer{clusters: clusters} }

// noFinalizer lets through only the creates that lack the finalizer.
const noFinalizer = `!has(object.metadata.finalizers) || !('` + workv1.ManifestWorkFinalizer + `' in object.metadata.finalizers)`

// Registration sends creates of manifestworks without the finalizer.
func (f *Finalizer) Registration() webhook.Registration {
	return webhook.Registration{
		Name: FinalizerName,
		Path: FinalizerPath,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{workv1.GroupVersion.Group},
				APIVersions: []string{workv1.GroupVersion.Version},
				Resources:   []string{"manifestworks"},
				Scope:       ptr(admissionregistrationv1.NamespacedScope),
			},
		}},
		// Without it the agent adds the finalizer: never fail a create for it.
		FailurePolicy:   admissionregistrationv1.Ignore,
		TimeoutSeconds:  2,
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "no-finalizer", Expression: noFinalizer}},
		Mutating:        true,
	}
}

// Handle answers one create with a patch adding the finalizer, or unchanged.
func (f *Finalizer) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	finalizers := obj.Metadata.Finalizers
	if slices.Contains(finalizers, workv1.ManifestWorkFinalizer) {
		return admission.Allowed("")
	}
	mc := &clusterv1.ManagedCluster{}
	if err := f.clusters.Get(ctx, client.ObjectKey{Name: req.Namespace}, mc); err != nil ||
		!meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
		// No agent to clean up after the work (or not known yet): its agent adds the
		// finalizer when it comes.
		return admission.Allowed("")
	}
	op := jsonpatch.NewOperation("add", "/metadata/finalizers", []string{workv1.ManifestWorkFinalizer})
	if len(finalizers) > 0 {
		op = jsonpatch.NewOperation("add", "/metadata/finalizers/-", workv1.ManifestWorkFinalizer)
	}
	return admission.Patched("", op)
}

package operatorrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// statePoll is how often StatusLoop looks at state it is not told about.
const statePoll = time.Second

// StatusLoop calls write now and again after every change src reports, after resync without
// one and, when changed is set, whenever changed (polled every second: state in memory)
// reports a change src does not see; until ctx ends. It logs write's errors.
func StatusLoop[T client.Object](ctx context.Context, src Source[T], resync time.Duration, changed func() bool, log logr.Logger,
	write func(context.Context) error) {
	changes, stop := src.Subscribe()
	defer stop()
	t := time.NewTicker(resync)
	defer t.Stop()
	var poll <-chan time.Time
	if changed != nil {
		p := time.NewTicker(statePoll)
		defer p.Stop()
		poll = p.C
	}
	kind := Kind[T]()
	for {
		if err := write(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Writing "+kind+" status", lowerFirst(kind), src.Name())
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-changes:
				break wait
			case <-t.C:
				break wait
			case <-poll:
				if changed() {
					break wait
				}
			}
		}
	}
}

// Status is what an operator writes of ClusterManagerStatus and KlusterletStatus, which both
// have these fields.
type Status struct {
	ObservedGeneration int64
	Conditions         []metav1.Condition
	Generations        []operatorv1.GenerationStatus
	RelatedResources   []operatorv1.RelatedResourceMeta
}

// ApplyStatus makes the status of obj, have as read, say want, with server-side apply as
// fieldManager, unless it does already. Every condition of want observes
// want.ObservedGeneration; a condition's lastTransitionTime moves only when its status does.
// Empty generations or relatedResources are left out.
func ApplyStatus(ctx context.Context, c client.Client, obj client.Object, fieldManager string, have, want Status) error {
	want.Conditions = slices.Clone(want.Conditions)
	for i := range want.Conditions {
		want.Conditions[i].ObservedGeneration = want.ObservedGeneration
	}
	if upToDate(have, want) {
		return nil
	}
	current := slices.Clone(have.Conditions)
	for _, c := range want.Conditions {
		meta.SetStatusCondition(&current, c)
	}
	mine := make([]metav1.Condition, 0, len(want.Conditions))
	for _, c := range want.Conditions {
		mine = append(mine, *meta.FindStatusCondition(current, c.Type))
	}
	status := map[string]any{"observedGeneration": want.ObservedGeneration, "conditions": mine}
	if len(want.Generations) > 0 {
		status["generations"] = want.Generations
	}
	if len(want.RelatedResources) > 0 {
		status["relatedResources"] = want.RelatedResources
	}
	return apply.Fields(ctx, c, obj, fieldManager, true, map[string]any{"status": status})
}

// upToDate reports that have already says what want would write.
func upToDate(have, want Status) bool {
	if have.ObservedGeneration != want.ObservedGeneration || !slices.Equal(have.Generations, want.Generations) ||
		!slices.Equal(have.RelatedResources, want.RelatedResources) {
		return false
	}
	for _, w := range want.Conditions {
		got := meta.FindStatusCondition(have.Conditions, w.Type)
		if got == nil || got.Status != w.Status || got.Reason != w.Reason || got.Message != w.Message || got.ObservedGeneration != w.ObservedGeneration {
			return false
		}
	}
	return true
}

// DeploymentStatus reads the process's own Deployment d (zero: none) for status.generations;
// dep is nil when there is none.
func DeploymentStatus(ctx context.Context, r client.Reader, d types.NamespacedName) (dep *appsv1.Deployment, generations []operatorv1.GenerationStatus, err error) {
	if d.Name == "" {
		return nil, nil, nil
	}
	dep = &appsv1.Deployment{}
	switch err := r.Get(ctx, d, dep); {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading Deployment %s: %w", d, err)
	}
	return dep, []operatorv1.GenerationStatus{{Group: "apps", Version: "v1", Resource: "deployments",
		Namespace: d.Namespace, Name: d.Name, LastGeneration: dep.Generation}}, nil
}

// RelatedDeployment is Deployment d in status.relatedResources.
func RelatedDeployment(d types.NamespacedName) operatorv1.RelatedResourceMeta {
	return operatorv1.RelatedResourceMeta{Group: "apps", Version: "v1", Resource: "deployments", Namespace: d.Namespace, Name: d.Name}
}

// RelatedCRD is the CustomResourceDefinition name in status.relatedResources.
func RelatedCRD(name string) operatorv1.RelatedResourceMeta {
	return operatorv1.RelatedResourceMeta{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Name: name}
}

// RelatedLease is the leader election Lease namespace/name in status.relatedResources.
func RelatedLease(namespace, name string) operatorv1.RelatedResourceMeta {
	return operatorv1.RelatedResourceMeta{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespace: namespace, Name: name}
}

// FeatureGates are the featureGates lists of an operator API object, one per OCM component,
// read for the gates each component implements.
type FeatureGates struct {
	// Overrides holds the entries implemented: Enable true, Disable false.
	Overrides map[string]bool
	// Invalid names the entries not implemented, one item per component, in OCM's form
	// ("Work: [Foo Bar]").
	Invalid []string
}

// Read takes component's list; implemented reports whether the component implements a gate.
func (f *FeatureGates) Read(component string, gates []operatorv1.FeatureGate, implemented func(name string) bool) {
	var invalid []string
	for _, g := range gates {
		if !implemented(g.Feature) {
			invalid = append(invalid, g.Feature)
			continue
		}
		if f.Overrides == nil {
			f.Overrides = map[string]bool{}
		}
		// The CRD defaults an empty mode to Disable.
		f.Overrides[g.Feature] = g.Mode == operatorv1.FeatureGateModeTypeEnable
	}
	if len(invalid) > 0 {
		f.Invalid = append(f.Invalid, fmt.Sprintf("%s: %v", component, invalid))
	}
}

// Condition is ValidFeatureGates, as OCM's operator words it.
func (f FeatureGates) Condition() metav1.Condition {
	if len(f.Invalid) == 0 {
		return metav1.Condition{Type: operatorv1.ConditionValidFeatureGates, Status: metav1.ConditionTrue,
			Reason: operatorv1.ReasonFeatureGatesAllValid, Message: "Feature gates are all valid"}
	}
	return metav1.Condition{Type: operatorv1.ConditionValidFeatureGates, Status: metav1.ConditionFalse,
		Reason:  operatorv1.ReasonInvalidFeatureGatesExisting,
		Message: fmt.Sprintf("There are some invalid feature gates of %v, will process them with default values", strings.Join(f.Invalid, " "))}
}

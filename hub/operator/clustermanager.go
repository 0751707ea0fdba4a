package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/crds"
	"github.com/flotilla-dev/flotilla/core/install"
)

// Names of the hub operator's objects and labels.
const (
	// OperatorNamespace holds the operator, its Lease and its values ConfigMap.
	OperatorNamespace = "open-cluster-management"
	// ValuesConfigMap holds the Flotilla-only chart values (key ValuesKey), written by the
	// chart's render: operator.
	ValuesConfigMap = "flotilla-hub-values"
	ValuesKey       = "values.yaml"
	// OperatorLease is the operator's leader election Lease in OperatorNamespace.
	OperatorLease = "cluster-manager-operator-lock"
	// ManagedByLabel and ManagedByValue, with ClusterManagerLabel: the ClusterManager's
	// name, mark every object the operator applied; the prune selects by them.
	ManagedByLabel      = "app.kubernetes.io/managed-by"
	ManagedByValue      = "flotilla-operator"
	ClusterManagerLabel = "operator.open-cluster-management.io/clustermanager"
	// DeployFieldManager and StatusFieldManager are the operator's server-side-apply managers.
	DeployFieldManager = apply.FieldManagerPrefix + "cluster-manager-operator-deploy"
	StatusFieldManager = apply.FieldManagerPrefix + "cluster-manager-operator-status"
	// ImageEnv is the operator's own image, which replaces OCM images in the spec.
	ImageEnv = "FLOTILLA_IMAGE"
)

// maxValuesBytes caps the values ConfigMap read (a ConfigMap holds at most 1 MiB anyway).
const maxValuesBytes = 1 << 20

// renderTimeout bounds one render and apply.
const renderTimeout = 2 * time.Minute

// pruneKinds are the kinds the hub chart's components render and the operator may delete.
var pruneKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
}

// labelsFor are the labels of what the operator applies for ClusterManager name.
func labelsFor(name string) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, ClusterManagerLabel: name}
}

// desired is what the operator applies for a ClusterManager: the components rendered from
// the chart, or why not.
type desired struct {
	spec SpecValues
	// objs are the rendered objects, CRDs left out (the registration-controller installs them).
	objs []*unstructured.Unstructured
	// err says why nothing can be rendered; the Applied reason goes with it.
	err    error
	reason string
}

// render computes what cm asks for: values from its spec over the values ConfigMap's.
func render(ctx context.Context, r client.Reader, cm *operatorv1.ClusterManager, opNamespace, ownImage string) desired {
	var d desired
	sv, err := ValuesFor(&cm.Spec, ownImage)
	if err != nil {
		return desired{err: fmt.Errorf("ClusterManager %s: %w", cm.Name, err), reason: operatorv1.ReasonRuntimeResourceApplyFailed}
	}
	d.spec = sv
	if b := sv.Blocking(); b != nil {
		d.err, d.reason = errors.New(b.Message), operatorv1.ReasonUnsupportedConfiguration
		return d
	}
	values, err := readValues(ctx, r, opNamespace)
	if err != nil {
		d.err, d.reason = err, operatorv1.ReasonRuntimeResourceApplyFailed
		return d
	}
	objs, err := install.Render(install.HubChart, install.HubChart, operatorv1.ClusterManagerDefaultNamespace, ComponentValues(values, sv, cm.Name))
	if err != nil {
		d.err, d.reason = fmt.Errorf("rendering the hub for ClusterManager %s: %w", cm.Name, err), operatorv1.ReasonRuntimeResourceApplyFailed
		return d
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			d.objs = append(d.objs, o)
		}
	}
	return d
}

// readValues reads the values ConfigMap; a missing one is no values.
func readValues(ctx context.Context, r client.Reader, namespace string) (map[string]any, error) {
	cmap := &corev1.ConfigMap{}
	err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ValuesConfigMap}, cmap)
	if apierrors.IsNotFound(err) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, ValuesConfigMap, err)
	}
	data := cmap.Data[ValuesKey]
	if len(data) > maxValuesBytes {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s has %d bytes, more than %d", namespace, ValuesConfigMap, ValuesKey, len(data), maxValuesBytes)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal([]byte(data), &values); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", namespace, ValuesConfigMap, ValuesKey, err)
	}
	return values, nil
}

// deployReconciler renders the hub's components from the ClusterManager, applies them with
// its own field manager, owned by the ClusterManager, and prunes what is no longer rendered.
// It writes the Applied condition.
type deployReconciler struct {
	client      client.Client
	config      *rest.Config
	name        string
	opNamespace string
	ownImage    string
	log         logr.Logger
	// recheck asks for one more reconcile after retireGrace (retireWebhooks deleted something).
	recheck bool
}

// retireGrace is a Pod's default termination grace period: a process of a component no
// longer rendered may run that long.
const retireGrace = 30 * time.Second

func (r *deployReconciler) reconcile(ctx context.Context) error {
	cm := &operatorv1.ClusterManager{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: r.name}, cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !cm.DeletionTimestamp.IsZero() {
		return nil // garbage collection removes what it owns
	}
	ctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	d := render(ctx, r.client, cm, r.opNamespace, r.ownImage)
	if d.err != nil {
		return r.applied(ctx, cm, metav1.ConditionFalse, d.reason, d.err.Error(), d.reason != operatorv1.ReasonUnsupportedConfiguration)
	}
	owner := metav1.OwnerReference{APIVersion: operatorv1.GroupVersion.String(), Kind: "ClusterManager", Name: cm.Name, UID: cm.UID}
	for _, o := range d.objs {
		if o.GetKind() != "Namespace" {
			o.SetOwnerReferences([]metav1.OwnerReference{owner})
		}
	}
	err := install.ApplyWith(ctx, r.config, d.objs, install.ApplyOptions{
		FieldManager: DeployFieldManager, Labels: labelsFor(cm.Name),
		Prune: &install.Prune{Kinds: pruneKinds, Namespace: operatorv1.ClusterManagerDefaultNamespace},
	})
	if err != nil {
		return r.applied(ctx, cm, metav1.ConditionFalse, operatorv1.ReasonRuntimeResourceApplyFailed, err.Error(), true)
	}
	kube, err := kubernetes.NewForConfig(r.config)
	if err != nil {
		return err
	}
	retired, err := retireWebhooks(ctx, kube, cm.Name, d.objs)
	if err != nil {
		return r.applied(ctx, cm, metav1.ConditionFalse, operatorv1.ReasonWebhookApplyFailed, fmt.Sprintf("ClusterManager %s: %v", cm.Name, err), true)
	}
	if retired {
		// A process of the old topology still stopping may write its configuration again:
		// look once more after its grace period.
		r.recheck = true
	}
	var deployments []string
	for _, o := range d.objs {
		if o.GetKind() == "Deployment" {
			deployments = append(deployments, o.GetName())
		}
	}
	msg := "Components of the hub are applied: " + strings.Join(deployments, ", ")
	if len(d.spec.Notes) > 0 {
		msg += "; " + strings.Join(d.spec.Notes, "; ")
	}
	return r.applied(ctx, cm, metav1.ConditionTrue, operatorv1.ReasonClusterManagerApplied, msg, false)
}

// applied writes the Applied condition for cm's generation; failed returns an error too so
// the reconcile is retried.
func (r *deployReconciler) applied(ctx context.Context, cm *operatorv1.ClusterManager, status metav1.ConditionStatus, reason, msg string, failed bool) error {
	_, err := apply.Condition(ctx, r.client, cm, cm.Status.Conditions, DeployFieldManager, metav1.Condition{
		Type: operatorv1.ConditionClusterManagerApplied, Status: status, Reason: reason, Message: msg, ObservedGeneration: cm.Generation,
	})
	if err != nil {
		return fmt.Errorf("ClusterManager %s: writing condition Applied: %w", cm.Name, err)
	}
	if failed {
		return fmt.Errorf("ClusterManager %s: %s", cm.Name, msg)
	}
	return nil
}

// statusReconciler writes the ClusterManager's status but Applied: observedGeneration once
// Applied observed the generation, Progressing and the Degraded conditions from the
// Deployments, ValidFeatureGates, ValidConfiguration, generations and relatedResources.
type statusReconciler struct {
	client      client.Client
	name        string
	opNamespace string
	ownImage    string
}

func (r *statusReconciler) reconcile(ctx context.Context) error {
	cm := &operatorv1.ClusterManager{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: r.name}, cm); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !cm.DeletionTimestamp.IsZero() {
		return nil
	}
	d := render(ctx, r.client, cm, r.opNamespace, r.ownImage)
	list := &appsv1.DeploymentList{}
	if err := r.client.List(ctx, list, client.InNamespace(operatorv1.ClusterManagerDefaultNamespace), client.MatchingLabels(labelsFor(cm.Name))); err != nil {
		return fmt.Errorf("ClusterManager %s: listing its Deployments: %w", cm.Name, err)
	}
	slices.SortFunc(list.Items, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })

	observed := cm.Status.ObservedGeneration
	if a := meta.FindStatusCondition(cm.Status.Conditions, operatorv1.ConditionClusterManagerApplied); a != nil && a.ObservedGeneration == cm.Generation {
		observed = cm.Generation
	}
	want := []metav1.Condition{
		d.spec.Gates.Condition(),
		validConfiguration(d.spec),
		progressing(list.Items),
		degraded(list.Items, cm.Name, operatorv1.ConditionHubRegistrationDegraded, "registration-controller", "registration",
			operatorv1.ReasonGetRegistrationDeploymentFailed, operatorv1.ReasonUnavailableRegistrationPod,
			operatorv1.ReasonRegistrationFunctional, "Registration is managing credentials"),
		degraded(list.Items, cm.Name, operatorv1.ConditionHubPlacementDegraded, "placement-controller", "placement",
			operatorv1.ReasonGetPlacementDeploymentFailed, operatorv1.ReasonUnavailablePlacementPod,
			operatorv1.ReasonPlacementFunctional, "Placement is scheduling placement decisions"),
	}
	var generations []operatorv1.GenerationStatus
	for _, dep := range list.Items {
		generations = append(generations, operatorv1.GenerationStatus{Group: "apps", Version: "v1", Resource: "deployments",
			Namespace: dep.Namespace, Name: dep.Name, LastGeneration: dep.Generation})
	}
	related, err := relatedOf(d.objs)
	if err != nil {
		return err
	}

	conds := slices.Clone(cm.Status.Conditions)
	mine := make([]any, 0, len(want))
	changed := observed != cm.Status.ObservedGeneration || !slices.Equal(generations, cm.Status.Generations) || !slices.Equal(related, cm.Status.RelatedResources)
	for _, c := range want {
		c.ObservedGeneration = observed
		if old := meta.FindStatusCondition(conds, c.Type); old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration {
			changed = true
		}
		meta.SetStatusCondition(&conds, c)
		mine = append(mine, *meta.FindStatusCondition(conds, c.Type))
	}
	if !changed {
		return nil
	}
	status := map[string]any{"observedGeneration": observed, "conditions": mine}
	if len(generations) > 0 {
		status["generations"] = generations
	}
	if len(related) > 0 {
		status["relatedResources"] = related
	}
	if err := apply.Guarded(ctx, r.client, cm, StatusFieldManager, true, map[string]any{"status": status}); err != nil {
		return fmt.Errorf("ClusterManager %s: writing status: %w", cm.Name, err)
	}
	return nil
}

func validConfiguration(sv SpecValues) metav1.Condition {
	if u := sv.Unsupported(); len(u) > 0 {
		return metav1.Condition{Type: operatorv1.ConditionValidConfiguration, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonUnsupportedFields,
			Message: "Flotilla does not implement these fields and ignores them: " + strings.Join(u, ", ")}
	}
	return metav1.Condition{Type: operatorv1.ConditionValidConfiguration, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonConfigurationValid,
		Message: "Flotilla implements every field set"}
}

// progressing is True while a Deployment has not rolled out its generation to every
// replica: OCM's test (observed generation, ready replicas) and every replica updated.
func progressing(deps []appsv1.Deployment) metav1.Condition {
	var rolling []string
	for _, d := range deps {
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != replicas || d.Status.ReadyReplicas != replicas {
			rolling = append(rolling, d.Name)
		}
	}
	if len(rolling) > 0 {
		return metav1.Condition{Type: operatorv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonDeploymentRolling,
			Message: fmt.Sprintf("Deployments %s is still rolling", strings.Join(rolling, ","))}
	}
	return metav1.Condition{Type: operatorv1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonUpToDate,
		Message: "Components of cluster manager are up to date"}
}

// degraded is a HubRegistrationDegraded or HubPlacementDegraded condition from the
// component's Deployment (Split) or the single hub's (flotilla-hub), as OCM words it.
func degraded(deps []appsv1.Deployment, cm, condType, component, what, getFailed, unavailable, functional, functionalMsg string) metav1.Condition {
	var dep *appsv1.Deployment
	for i := range deps {
		if deps[i].Name == cm+"-"+component || deps[i].Name == "flotilla-hub" {
			dep = &deps[i]
		}
	}
	if dep == nil {
		return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: getFailed,
			Message: fmt.Sprintf("Failed to get %s deployment %q %q: not found", what, operatorv1.ClusterManagerDefaultNamespace, cm+"-"+component)}
	}
	replicas := int32(1)
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	if n := replicas - dep.Status.AvailableReplicas; n > 0 {
		return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: unavailable,
			Message: fmt.Sprintf("%d of requested instances are unavailable of %s deployment %q %q", n, what, dep.Namespace, dep.Name)}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: functional, Message: functionalMsg}
}

// relatedOf lists every object the operator applies and the CRDs the
// registration-controller installs, as OCM's operator lists them (clusteradm finds the
// Deployments by name here).
func relatedOf(objs []*unstructured.Unstructured) ([]operatorv1.RelatedResourceMeta, error) {
	var out []operatorv1.RelatedResourceMeta
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		// The kinds the hub chart renders all take an "s" for their resource.
		out = append(out, operatorv1.RelatedResourceMeta{Group: gvk.Group, Version: gvk.Version,
			Resource: strings.ToLower(gvk.Kind) + "s", Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	all, err := crds.Objects()
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		out = append(out, operatorv1.RelatedResourceMeta{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Name: c.Name})
	}
	return out, nil
}

// ownImage is the operator's image from its environment.
func ownImage() string { return os.Getenv(ImageEnv) }

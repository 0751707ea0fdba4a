package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlbuilder "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/core/leaderelection"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// OperatorOptions configure the klusterlet operator (`flotilla operator klusterlet`).
type OperatorOptions struct {
	// Config reaches the cluster the operator runs on: the management cluster of Hosted
	// Klusterlets, the managed cluster of the others.
	Config *rest.Config
	// LeaderElection of the operator's replicas; its Lease defaults to OperatorLease in
	// OperatorNamespace.
	LeaderElection leaderelection.Config
	// HealthProbeBindAddress serves /healthz and /readyz, MetricsBindAddress the metrics;
	// "" or "0" off.
	HealthProbeBindAddress, MetricsBindAddress string
	// NotReadyRetry is how soon a Hosted Klusterlet whose managed cluster cannot be reached
	// is tried again (a change of its Secret is seen at once); default 30 s.
	NotReadyRetry time.Duration
	Logger        logr.Logger
}

// RunKlusterletOperator runs the klusterlet operator until ctx ends: one manager, two
// reconcilers of every Klusterlet on the cluster (deploy with its cleanup, status).
func RunKlusterletOperator(ctx context.Context, opts OperatorOptions) error {
	if opts.Config == nil {
		return errors.New("klusterlet operator: no rest.Config")
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := operatorv1.AddToScheme(scheme); err != nil {
		return err
	}
	ours := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedByValue})
	mopts := ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: cmp.Or(opts.MetricsBindAddress, "0")},
		HealthProbeBindAddress: cmp.Or(opts.HealthProbeBindAddress, "0"),
		// Least privilege in the cache: the Deployments it applied, and the external managed
		// kubeconfig Secrets by name; everything else is read when needed.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}: {Label: ours},
			&corev1.Secret{}:     {Field: fields.OneTermEqualSelector("metadata.name", operatorv1.ExternalManagedKubeConfigSecret)},
			&corev1.ConfigMap{}:  {Field: fields.OneTermEqualSelector("metadata.name", ValuesConfigMap)},
		}},
	}
	if opts.LeaderElection.Enabled {
		le := opts.LeaderElection.WithDefaults(OperatorNamespace, OperatorLease)
		if err := leaderelection.Manager(ctx, opts.Config, le, "flotilla-klusterlet-operator", log.WithName("leader-election"), &mopts); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(opts.Config, mopts)
	if err != nil {
		return fmt.Errorf("klusterlet operator: %w", err)
	}
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return fmt.Errorf("klusterlet operator: %w", err)
	}
	base := kreconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kube: kube, config: opts.Config,
		retry: cmp.Or(opts.NotReadyRetry, 30*time.Second), log: log}
	for _, setup := range []func(ctrl.Manager) error{
		(&deployKlusterlet{base, &cleanupKlusterlet{base}}).setup, (&statusKlusterlet{base}).setup,
	} {
		if err := setup(mgr); err != nil {
			return fmt.Errorf("klusterlet operator: %w", err)
		}
	}
	if opts.HealthProbeBindAddress != "" && opts.HealthProbeBindAddress != "0" {
		if err := mgr.AddHealthzCheck("ping", func(*http.Request) error { return nil }); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("cache", func(r *http.Request) error {
			if !mgr.GetCache().WaitForCacheSync(r.Context()) {
				return errors.New("caches not synced")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	log.Info("klusterlet operator starting")
	return mgr.Start(ctx)
}

// kreconciler is what the three reconcilers share.
type kreconciler struct {
	client client.Client
	reader client.Reader
	kube   kubernetes.Interface
	config *rest.Config
	retry  time.Duration
	log    logr.Logger
}

// toOwnerKlusterlet maps an object the operator applied (or a Secret in an agent namespace)
// to its Klusterlet.
func toOwnerKlusterlet() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[operatorv1.KlusterletNamespaceLabel]
		if o.GetName() == operatorv1.ExternalManagedKubeConfigSecret {
			name = o.GetNamespace() // the agent namespace is the Hosted Klusterlet's name
		}
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	})
}

func reconcileFunc(f func(context.Context, string) (reconcile.Result, error)) reconcile.Reconciler {
	return apply.Quiet(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
		defer cancel()
		return f(ctx, req.Name)
	}))
}

// layout is the mode that decides where things are: the one first applied, else the spec's.
func layout(k *operatorv1.Klusterlet) (mode, applied operatorv1.InstallMode) {
	applied = operatorv1.InstallMode(k.Annotations[AppliedModeAnnotation])
	if applied != "" {
		return normalMode(applied), applied
	}
	return normalMode(k.Spec.DeployOption.Mode), ""
}

// clustersOf are the clusters of k; for a Hosted one the managed cluster's config comes from
// its Secret, and ReadyToApply says whether it could be built (written first, also while
// deleting). It creates the agent namespace of a Hosted Klusterlet, for the user's Secret.
func (r *kreconciler) clustersOf(ctx context.Context, k *operatorv1.Klusterlet) (clusters, bool, error) {
	mode, _ := layout(k)
	if !hosted(mode) {
		return clusters{management: r.config, managed: r.config}, true, nil
	}
	if k.DeletionTimestamp.IsZero() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.Name, Labels: map[string]string{ManagedByLabel: ManagedByValue}}}
		if _, err := r.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return clusters{}, false, fmt.Errorf("Klusterlet %s: creating its agent namespace: %w", k.Name, err)
		}
	}
	c, perr := prepare(ctx, r.kube, r.config, k.Name)
	cond := readyToApply(c, perr)
	cond.ObservedGeneration = k.Generation
	if _, err := apply.Condition(ctx, r.client, k, k.Status.Conditions, OperatorPrepareFieldManager, cond); err != nil {
		return c, false, fmt.Errorf("Klusterlet %s: writing condition ReadyToApply: %w", k.Name, err)
	}
	return c, perr == nil, nil
}

// deployKlusterlet renders a Klusterlet's components and applies them to the cluster each
// belongs to; Hosted, it also syncs the agents' managed-cluster kubeconfigs. It writes Applied.
// A deleted Klusterlet goes to cleanup in the same queue, so an apply still running never
// puts back what the cleanup deleted.
type deployKlusterlet struct {
	kreconciler
	cleanup *cleanupKlusterlet
}

func (r *deployKlusterlet) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("klusterlet-deploy").
		For(&operatorv1.Klusterlet{}, ctrlbuilder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting()))).
		// A Deployment's spec changed or deleted by someone else is applied again.
		Watches(&appsv1.Deployment{}, toOwnerKlusterlet(), ctrlbuilder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, toOwnerKlusterlet()).
		// A change of the values ConfigMap renders again.
		Watches(&corev1.ConfigMap{}, toAgentNamespaceKlusterlets(mgr.GetClient())).
		Complete(reconcileFunc(r.reconcile))
}

// toAgentNamespaceKlusterlets maps a values ConfigMap to the Klusterlets whose agent
// namespace it is in.
func toAgentNamespaceKlusterlets(c client.Reader) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetName() != ValuesConfigMap {
			return nil
		}
		list := &operatorv1.KlusterletList{}
		if err := c.List(ctx, list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			k := &list.Items[i]
			if _, applied := layout(k); ValuesFor(k, applied).AgentNamespace == o.GetNamespace() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: k.Name}})
			}
		}
		return out
	})
}

func (r *deployKlusterlet) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	k := &operatorv1.Klusterlet{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, k); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !k.DeletionTimestamp.IsZero() {
		return r.cleanup.reconcile(ctx, k)
	}
	c, ready, err := r.clustersOf(ctx, k)
	if err != nil || !ready {
		return reconcile.Result{RequeueAfter: r.retry}, err
	}
	mode, applied := layout(k)
	cmValues, err := readValues(ctx, r.client, ValuesFor(k, applied).AgentNamespace)
	if err != nil {
		return reconcile.Result{}, r.applied(ctx, k, metav1.ConditionFalse, operatorv1.ReasonKlusterletApplyFailed, fmt.Sprintf("nothing applied: %v", err))
	}
	rd, err := renderKlusterlet(k, applied, cmValues)
	if err != nil {
		return reconcile.Result{}, r.applied(ctx, k, metav1.ConditionFalse, operatorv1.ReasonKlusterletApplyFailed, fmt.Sprintf("nothing applied: %v", err))
	}
	if c, blocked := rd.values.NotApplied(); blocked {
		c.ObservedGeneration = k.Generation
		if _, err := apply.Condition(ctx, r.client, k, k.Status.Conditions, OperatorDeployFieldManager, c); err != nil {
			return reconcile.Result{}, fmt.Errorf("Klusterlet %s: writing condition Applied: %w", k.Name, err)
		}
		return reconcile.Result{}, nil // a spec change is needed
	}
	// The finalizers and the mode go on before anything is applied, so nothing applied is left
	// behind and a later mode change is refused.
	if err := apply.Fields(ctx, r.client, k, OperatorDeployFieldManager, false, map[string]any{"metadata": map[string]any{
		"finalizers":  finalizersFor(k, true),
		"annotations": map[string]any{AppliedModeAnnotation: string(mode)},
	}}); err != nil {
		return reconcile.Result{}, fmt.Errorf("Klusterlet %s: adding its finalizers: %w", k.Name, err)
	}
	owner := metav1.OwnerReference{APIVersion: operatorv1.GroupVersion.String(), Kind: "Klusterlet", Name: k.Name, UID: k.UID}
	for _, o := range rd.management {
		if o.GetKind() == "Deployment" {
			o.SetOwnerReferences([]metav1.OwnerReference{owner})
		}
	}
	if hosted(mode) {
		if err := install.ApplyWith(ctx, c.managed, rd.managed, applyOptions(k.Name, operatorv1.TargetManaged)); err != nil {
			reason, msg := applyFailed(err, operatorv1.TargetManaged)
			return reconcile.Result{}, r.applied(ctx, k, metav1.ConditionFalse, reason, msg)
		}
	}
	mgmtSide := ""
	if hosted(mode) {
		mgmtSide = operatorv1.TargetManagement
	}
	if err := install.ApplyWith(ctx, c.management, rd.management, applyOptions(k.Name, mgmtSide)); err != nil {
		side := operatorv1.TargetManagement
		if !hosted(mode) {
			side = "local"
		}
		reason, msg := applyFailed(err, side)
		if !hosted(mode) {
			reason = operatorv1.ReasonKlusterletApplyFailed
		}
		return reconcile.Result{}, r.applied(ctx, k, metav1.ConditionFalse, reason, msg)
	}
	var result reconcile.Result
	if hosted(mode) {
		next, err := syncTokens(ctx, r.kube, c, k, rd, owner, time.Now())
		if err != nil {
			return reconcile.Result{}, r.applied(ctx, k, metav1.ConditionFalse, operatorv1.ReasonManagedClusterResourceApplyFailed,
				fmt.Sprintf("syncing the agents' managed cluster kubeconfigs: %v", err))
		}
		result.RequeueAfter = next
	}
	msg := fmt.Sprintf("Klusterlet components are applied (%s mode): %s", mode, strings.Join(deployments(rd.management), ", "))
	if len(rd.values.Images) > 0 {
		msg += "; " + strings.Join(rd.values.Images, "; ")
	}
	if len(rd.ignored) > 0 {
		msg += fmt.Sprintf("; ConfigMap %s/%s: %s not used, the Klusterlet sets them", rd.values.AgentNamespace, ValuesConfigMap, strings.Join(rd.ignored, ", "))
	}
	return result, r.applied(ctx, k, metav1.ConditionTrue, operatorv1.ReasonKlusterletApplied, msg)
}

// pruneKinds are the kinds of the klusterlet chart's components the operator deletes when
// a spec change stops rendering them: spec.namespace moves the agents, and the old
// namespace goes with what is in it, as OCM's operator deletes it once the new one is
// applied (the prune runs after the apply). CRDs stay (shared; the cleanup of the last
// Klusterlet removes them); Secrets are applied apart (the Hosted agents' kubeconfigs).
var pruneKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Version: "v1", Kind: "Namespace"},
}

// applyOptions apply and prune what the operator renders for Klusterlet name on one side
// (operatorv1.TargetManaged or TargetManagement in the Hosted modes, "" for the one cluster
// of the others): the side's label keeps the prune of one side off the other's objects when
// both are the same cluster.
func applyOptions(name, side string) install.ApplyOptions {
	l := operatorLabels(name)
	if side != "" {
		l[operatorv1.TargetLabel] = side
	}
	return install.ApplyOptions{FieldManager: OperatorDeployFieldManager, Labels: l, Prune: &install.Prune{Kinds: pruneKinds}}
}

// applied writes Applied for k's generation; when False it also returns an error, so the
// reconcile is retried.
func (r *deployKlusterlet) applied(ctx context.Context, k *operatorv1.Klusterlet, status metav1.ConditionStatus, reason, msg string) error {
	if _, err := apply.Condition(ctx, r.client, k, k.Status.Conditions, OperatorDeployFieldManager, metav1.Condition{
		Type: operatorv1.ConditionKlusterletApplied, Status: status, Reason: reason, Message: msg, ObservedGeneration: k.Generation,
	}); err != nil {
		return fmt.Errorf("Klusterlet %s: writing condition Applied: %w", k.Name, err)
	}
	if status == metav1.ConditionFalse {
		return fmt.Errorf("Klusterlet %s: %s", k.Name, msg)
	}
	return nil
}

// statusKlusterlet writes every status field but Applied and ReadyToApply: observedGeneration
// once Applied observed the generation, Available and the Desired Degraded conditions from
// the agents' Deployments, HubConnectionDegraded (every DefaultStatusResync),
// ValidFeatureGates, ValidConfiguration, generations and relatedResources.
type statusKlusterlet struct{ kreconciler }

func (r *statusKlusterlet) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("klusterlet-status").
		For(&operatorv1.Klusterlet{}).
		Watches(&appsv1.Deployment{}, toOwnerKlusterlet()).
		Complete(reconcileFunc(r.reconcile))
}

func (r *statusKlusterlet) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	k := &operatorv1.Klusterlet{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, k); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !k.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	mode, applied := layout(k)
	v := ValuesFor(k, applied)
	list := &appsv1.DeploymentList{}
	if err := r.client.List(ctx, list, client.InNamespace(v.AgentNamespace), client.MatchingLabels(operatorLabels(k.Name))); err != nil {
		return reconcile.Result{}, fmt.Errorf("Klusterlet %s: listing its Deployments: %w", k.Name, err)
	}
	slices.SortFunc(list.Items, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
	observed := k.Status.ObservedGeneration
	if a := meta.FindStatusCondition(k.Status.Conditions, operatorv1.ConditionKlusterletApplied); a != nil && a.ObservedGeneration == k.Generation &&
		a.Status == metav1.ConditionTrue {
		observed = k.Generation
	}
	regAgent, workAgent := k.Name+"-registration-agent", k.Name+"-work-agent"
	if mode == operatorv1.InstallModeSingleton || mode == operatorv1.InstallModeSingletonHosted {
		regAgent, workAgent = k.Name+"-agent", k.Name+"-agent"
	}
	want := []metav1.Condition{
		v.Gates.Condition(),
		v.ValidConfiguration(),
		agentsAvailable(list.Items, v.AgentNamespace, regAgent, workAgent),
		desiredDegraded(list.Items, v.AgentNamespace, operatorv1.ConditionRegistrationDesiredDegraded, regAgent),
		desiredDegraded(list.Items, v.AgentNamespace, operatorv1.ConditionWorkDesiredDegraded, workAgent),
		// The agents' Secrets are in the agent namespace on this cluster in every mode.
		HubConnection(ctx, r.reader, v.AgentNamespace, registration.DefaultHubKubeconfigSecret, k.Spec.ClusterName, nil,
			func(ctx context.Context) (string, string) {
				ns, name := v.AgentNamespace, registration.DefaultBootstrapKubeconfigSecret
				if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err != nil {
					return operatorv1.ReasonBootstrapSecretMissing, fmt.Sprintf("Failed to get bootstrap secret %s/%s: %v", ns, name, err)
				}
				return "", ""
			}),
	}
	var generations []operatorv1.GenerationStatus
	for _, d := range list.Items {
		generations = append(generations, operatorv1.GenerationStatus{Group: "apps", Version: "v1", Resource: "deployments",
			Namespace: d.Namespace, Name: d.Name, LastGeneration: d.Generation})
	}
	var related []operatorv1.RelatedResourceMeta
	if cmValues, err := readValues(ctx, r.client, v.AgentNamespace); err == nil {
		if rd, err := renderKlusterlet(k, applied, cmValues); err == nil {
			related = relatedResources(append(slices.Clone(rd.management), rd.managed...))
		}
	}
	conds := slices.Clone(k.Status.Conditions)
	mine := make([]metav1.Condition, 0, len(want))
	changed := observed != k.Status.ObservedGeneration || !slices.Equal(generations, k.Status.Generations) || !slices.Equal(related, k.Status.RelatedResources)
	for _, c := range want {
		c.ObservedGeneration = observed
		if old := meta.FindStatusCondition(conds, c.Type); old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration {
			changed = true
		}
		meta.SetStatusCondition(&conds, c)
		mine = append(mine, *meta.FindStatusCondition(conds, c.Type))
	}
	// The hub connection changes without an event the operator watches: checked again as
	// OCM's operator does.
	resync := reconcile.Result{RequeueAfter: DefaultStatusResync}
	if !changed {
		return resync, nil
	}
	status := map[string]any{"observedGeneration": observed, "conditions": mine}
	if len(generations) > 0 {
		status["generations"] = generations
	}
	if len(related) > 0 {
		status["relatedResources"] = related
	}
	if err := apply.Guarded(ctx, r.client, k, OperatorStatusFieldManager, true, map[string]any{"status": status}); err != nil {
		return reconcile.Result{}, fmt.Errorf("Klusterlet %s: writing status: %w", k.Name, err)
	}
	return resync, nil
}

func findDeployment(deps []appsv1.Deployment, name string) *appsv1.Deployment {
	for i := range deps {
		if deps[i].Name == name {
			return &deps[i]
		}
	}
	return nil
}

func wantReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas != nil {
		return *d.Spec.Replicas
	}
	return 1
}

// agentsAvailable is Available: each agent Deployment has an available replica.
func agentsAvailable(deps []appsv1.Deployment, ns string, names ...string) metav1.Condition {
	for _, name := range slices.Compact(names) {
		d := findDeployment(deps, name)
		if d == nil {
			return metav1.Condition{Type: operatorv1.ConditionKlusterletAvailable, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonKlusterletGetDeploymentFailed,
				Message: fmt.Sprintf("Failed to get deployment %s/%s: not found", ns, name)}
		}
		if d.Status.AvailableReplicas == 0 {
			return metav1.Condition{Type: operatorv1.ConditionKlusterletAvailable, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonKlusterletNoAvailablePods,
				Message: fmt.Sprintf("%d of requested instances are unavailable of deployment %s/%s", wantReplicas(d), ns, name)}
		}
	}
	return metav1.Condition{Type: operatorv1.ConditionKlusterletAvailable, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonKlusterletAvailable,
		Message: "deployments are ready"}
}

// desiredDegraded is RegistrationDesiredDegraded or WorkDesiredDegraded from the agent's
// Deployment.
func desiredDegraded(deps []appsv1.Deployment, ns, condType, name string) metav1.Condition {
	d := findDeployment(deps, name)
	if d == nil {
		return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonKlusterletGetDeploymentFailed,
			Message: fmt.Sprintf("Failed to get deployment %s/%s: not found", ns, name)}
	}
	if n := wantReplicas(d) - d.Status.AvailableReplicas; n > 0 {
		return metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonKlusterletUnavailablePods,
			Message: fmt.Sprintf("%d of requested instances are unavailable of deployment %s/%s", n, ns, name)}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonKlusterletDeploymentsFunctional,
		Message: fmt.Sprintf("deployments %s/%s are ready", ns, name)}
}

// relatedResources lists every object applied (CRDs included), as OCM's operator does;
// clusteradm finds the agents' Deployments here by name.
func relatedResources(objs []*unstructured.Unstructured) []operatorv1.RelatedResourceMeta {
	var out []operatorv1.RelatedResourceMeta
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		resource := strings.ToLower(gvk.Kind) + "s" // every kind the chart renders takes an "s"
		out = append(out, operatorv1.RelatedResourceMeta{Group: gvk.Group, Version: gvk.Version, Resource: resource,
			Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	return out
}

// cleanupKlusterlet removes what the operator applied for a deleted Klusterlet: with the
// Hosted finalizer the managed cluster's side, then the management side, then its finalizers.
type cleanupKlusterlet struct{ kreconciler }

// deleting passes updates that mark an object deleted.
func deleting() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// sharedNamespaces are namespaces on the managed cluster every klusterlet there renders: they
// go with the last klusterlet namespace.
var sharedNamespaces = []string{operatorv1.AddOnDefaultNamespace, "open-cluster-management-managed-serviceaccount"}

func (r *cleanupKlusterlet) reconcile(ctx context.Context, k *operatorv1.Klusterlet) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(k, operatorv1.KlusterletFinalizer) &&
		!controllerutil.ContainsFinalizer(k, operatorv1.KlusterletHostedFinalizer) {
		return reconcile.Result{}, nil
	}
	mode, applied := layout(k)
	c, ready, err := r.clustersOf(ctx, k)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Render as applied: the objects by name, whatever the spec says now.
	was := k.DeepCopy()
	was.Spec.DeployOption.Mode = mode
	was.Spec.ClusterName = cmp.Or(was.Spec.ClusterName, "cleanup")
	// A registration driver refused after the apply changes no object's name: what was
	// applied under csr is cleaned.
	if was.Spec.RegistrationConfiguration != nil {
		was.Spec.RegistrationConfiguration.RegistrationDriver = operatorv1.RegistrationDriver{}
	}
	// The values ConfigMap can name objects (rbac, builtinAddons): read, unless unreadable,
	// which must not hold the cleanup up.
	cmValues, err := readValues(ctx, r.client, ValuesFor(was, applied).AgentNamespace)
	if err != nil {
		r.log.Info("cleaning up without the values ConfigMap", "klusterlet", k.Name, "error", err.Error())
	}
	rd, err := renderKlusterlet(was, applied, cmValues)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(rd.values.Blocking) > 0 {
		// Nothing could ever be applied (a name the chart refuses): nothing to clean.
		return reconcile.Result{}, r.removeFinalizers(ctx, k)
	}
	// The agents stop first, so nothing puts back what goes next.
	var agents []*unstructured.Unstructured
	for _, o := range rd.management {
		if o.GetKind() == "Deployment" {
			agents = append(agents, o)
		}
	}
	if err := install.Delete(ctx, c.management, agents, false); err != nil {
		return reconcile.Result{}, fmt.Errorf("Klusterlet %s: stopping its agents: %w", k.Name, err)
	}
	if hosted(mode) && controllerutil.ContainsFinalizer(k, operatorv1.KlusterletHostedFinalizer) {
		if !ready {
			if evict, err := time.Parse(time.RFC3339, k.Annotations[EvictionTimestampAnnotation]); err != nil || time.Now().Before(evict) {
				return reconcile.Result{RequeueAfter: r.retry}, nil // ReadyToApply says why
			}
			r.log.Info("giving up on the managed cluster's objects: its eviction time passed", "klusterlet", k.Name)
		} else {
			if err := r.leftovers(ctx, c, k.Name, rd.values.AgentNamespace); err != nil {
				return reconcile.Result{}, err
			}
			if err := cleanupSide(ctx, c.managed, k.Name, rd.managed); err != nil {
				return reconcile.Result{}, fmt.Errorf("Klusterlet %s: managed cluster: %w", k.Name, err)
			}
		}
		if err := apply.RemoveFinalizer(ctx, r.client, k, operatorv1.KlusterletHostedFinalizer); err != nil {
			return reconcile.Result{}, err
		}
	} else if !hosted(mode) {
		if err := r.leftovers(ctx, c, k.Name, rd.values.AgentNamespace); err != nil {
			return reconcile.Result{}, err
		}
	}
	side := rd.management
	if hosted(mode) {
		// The management cluster's CRDs stay (the operator's own), the agent namespace goes
		// with the Secrets in it.
		side = slices.DeleteFunc(slices.Clone(side), func(o *unstructured.Unstructured) bool { return o.GetKind() == "CustomResourceDefinition" })
	}
	if err := cleanupSide(ctx, c.management, k.Name, side); err != nil {
		return reconcile.Result{}, fmt.Errorf("Klusterlet %s: %w", k.Name, err)
	}
	return reconcile.Result{}, r.removeFinalizers(ctx, k)
}

// leftovers removes what the agents of Klusterlet name (agent namespace agentNS) left on the
// managed cluster beyond the rendered objects: the add-ons' Secrets (on both clusters) and
// the AppliedManifestWorks of its hub with what they own (all of them with the last
// klusterlet there), as flotilla unjoin does.
func (r *cleanupKlusterlet) leftovers(ctx context.Context, c clusters, name, agentNS string) error {
	progress := func(s string) { r.log.Info(s, "klusterlet", name) }
	managedKube, err := kubernetes.NewForConfig(c.managed)
	if err != nil {
		return err
	}
	managedDyn, err := dynamic.NewForConfig(c.managed)
	if err != nil {
		return err
	}
	for _, kube := range slices.Compact([]kubernetes.Interface{managedKube, r.kube}) {
		if err := DeleteAddOnSecrets(ctx, kube, agentNS, progress); err != nil {
			return fmt.Errorf("Klusterlet %s: %w", name, err)
		}
	}
	hubHash, err := AgentHubHash(ctx, r.kube, agentNS)
	if err != nil {
		return fmt.Errorf("Klusterlet %s: %w", name, err)
	}
	last, _, err := lastKlusterlet(ctx, managedKube, name)
	if err != nil {
		return fmt.Errorf("Klusterlet %s: %w", name, err)
	}
	if err := DeleteAppliedWorks(ctx, managedDyn, hubHash, last, progress); err != nil {
		return fmt.Errorf("Klusterlet %s: %w", name, err)
	}
	return nil
}

func (r *cleanupKlusterlet) removeFinalizers(ctx context.Context, k *operatorv1.Klusterlet) error {
	for _, f := range []string{operatorv1.KlusterletHostedFinalizer, operatorv1.KlusterletFinalizer} {
		if err := apply.RemoveFinalizer(ctx, r.client, k, f); err != nil {
			return fmt.Errorf("Klusterlet %s: %w", k.Name, err)
		}
	}
	return nil
}

// lastKlusterlet reports that no klusterlet namespace (labelled
// operatorv1.KlusterletNamespaceLabel) but Klusterlet name's remains on the cluster of kube,
// and names the others. A Hosted Klusterlet's agent namespace (its management side) does not
// count: what the check keeps (the managed cluster's CRDs, the add-on namespaces) serves the
// managed side only, which is another cluster's.
func lastKlusterlet(ctx context.Context, kube kubernetes.Interface, name string) (bool, []string, error) {
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: operatorv1.KlusterletNamespaceLabel})
	if err != nil {
		return false, nil, fmt.Errorf("listing the klusterlet namespaces: %w", err)
	}
	var others []string
	for _, ns := range nss.Items {
		if ns.Labels[operatorv1.KlusterletNamespaceLabel] != name && ns.Labels[operatorv1.TargetLabel] != operatorv1.TargetManagement &&
			!slices.Contains(sharedNamespaces, ns.Name) && ns.DeletionTimestamp.IsZero() {
			others = append(others, ns.Name)
		}
	}
	return len(others) == 0, others, nil
}

// cleanupSide deletes objs of Klusterlet name from the cluster of cfg: the Deployments first,
// the shared namespaces and the managed cluster's CRDs only when no other klusterlet
// namespace (labelled operatorv1.KlusterletNamespaceLabel) remains there; the Klusterlet CRD
// never (the operator's own API).
func cleanupSide(ctx context.Context, cfg *rest.Config, name string, objs []*unstructured.Unstructured) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	last, _, err := lastKlusterlet(ctx, kube, name)
	if err != nil {
		return err
	}
	var first, rest []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment":
			first = append(first, o)
		case o.GetKind() == "CustomResourceDefinition" && (!last || slices.Contains(managementCRDs, o.GetName())):
		case o.GetKind() == "Namespace" && slices.Contains(sharedNamespaces, o.GetName()) && !last:
		default:
			rest = append(rest, o)
		}
	}
	// install.Delete deletes in reverse order: the Deployments go first.
	return install.Delete(ctx, cfg, append(rest, first...), last)
}

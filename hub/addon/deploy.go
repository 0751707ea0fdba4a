package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/hub/addon/render"
)

// DeployControllerName names the deploy reconciler and its field manager.
const DeployControllerName = "addon-deploy"

// EventRenderFailed is the Event a ManagedClusterAddOn gets when its template cannot be
// rendered (the previous works stay).
const EventRenderFailed = "AddOnRenderFailed"

// renderRetry is how soon a failed render is tried again when nothing changes meanwhile (a
// plugin's transient failure; a deterministic one fails again, cheaply).
const renderRetry = time.Minute

// DeployReconciler deploys the agents of template add-ons and reports their progress and
// health on their ManagedClusterAddOns.
type DeployReconciler struct {
	Client client.Client
	Mapper meta.RESTMapper
	// Cache, when set, serves the reads of the add-on API's configuration kinds (the
	// manager's cache; a read that is not the desired configuration is made again through
	// Client); others are read through Client.
	Cache       client.Reader
	Registry    *wasm.Registry
	MaxWorkSize int
	Recorder    record.EventRecorder
	// Registrations gives an add-on's status.registrations from its template's
	// registration; nil writes none.
	Registrations func(cluster, addon string, regs []addonv1alpha1.RegistrationSpec) []addonv1alpha1.RegistrationConfig
}

// SetupWithManager watches ManagedClusterAddOns, their works, ClusterManagementAddOns and
// clusters (a Wasm template reads the cluster).
func (r *DeployReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(DeployControllerName).
		// Each reconcile is one cluster's add-on, independent of the others, and mostly waits
		// on API round trips: with 8 at once, 5,000 clusters installing a template add-on
		// went at 3 a second with kube-apiserver's CPU to spare (make bench-fleet).
		WithOptions(controller.Options{MaxConcurrentReconciles: 32}).
		For(&addonv1alpha1.ManagedClusterAddOn{}, builder.WithPredicates(mcaDeployChanged())).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetLabels()[addonv1alpha1.AddonLabelKey]; name != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
			}
			return nil
		})).
		// Its spec or annotations, not its status (written on every rollout step).
		Watches(&addonv1alpha1.ClusterManagementAddOn{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			mcas, err := listMCAs(ctx, r.Client, o.GetName())
			if err != nil {
				return nil
			}
			out := make([]reconcile.Request, 0, len(mcas))
			for _, m := range mcas {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			}
			return out
		}), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&flotillav1alpha1.WasmPlugin{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			// A plugin (re)loaded: the add-ons rendered by it render again.
			list := &addonv1alpha1.ManagedClusterAddOnList{}
			if err := r.Client.List(ctx, list); err != nil {
				return nil
			}
			var out []reconcile.Request
			for i := range list.Items {
				for _, ref := range list.Items[i].Status.ConfigReferences {
					if ref.ConfigGroupResource == WasmPluginResource && ref.DesiredConfig != nil && ref.DesiredConfig.Name == o.GetName() {
						out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
					}
				}
			}
			return out
		})).
		Watches(&clusterv1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			list := &addonv1alpha1.ManagedClusterAddOnList{}
			if err := r.Client.List(ctx, list, client.InNamespace(o.GetName())); err != nil {
				return nil
			}
			out := make([]reconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return out
		}), builder.WithPredicates(clusterRenderInputChanged())).
		Complete(apply.Quiet(r))
}

// Reconcile renders, applies and reports one ManagedClusterAddOn of a template add-on.
func (r *DeployReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mca := &addonv1alpha1.ManagedClusterAddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, mca); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !mca.DeletionTimestamp.IsZero() {
		// Its works go with it (owner references), once its pre-delete hook, if any, ran.
		return reconcile.Result{}, r.finalize(ctx, mca)
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: mca.Name}, cma); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	kind := templateKind(cma)
	if kind == (addonv1alpha1.ConfigGroupResource{}) || !cma.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	// A cluster being deleted gets no works: the hub's cleanup (hub/work CleanupHook) is
	// removing them, and rendering them again would hold the cluster's deletion forever.
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: mca.Namespace}, mc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("ManagedClusterAddOn %s/%s: reading its ManagedCluster: %w", mca.Namespace, mca.Name, err)
	}
	if !mc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	works, err := r.listWorks(ctx, mca)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := &deployStatus{mca: mca, works: works, health: healthMode(cma)}

	// Not configured (yet, or waiting for its turn in a rollout): nothing is rendered, but
	// the health of what runs is still reported.
	cfg := condition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured)
	configured := cfg != nil && cfg.Status == metav1.ConditionTrue && len(mca.Status.ConfigReferences) > 0
	var (
		rendered  renderOutput
		hashes    string
		renderErr error
		current   bool
	)
	if configured {
		rendered, hashes, renderErr, current = r.render(ctx, mca, kind)
	}
	switch {
	case renderErr != nil:
		st.renderErr = renderErr
		if p := condition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); p == nil || p.Message != renderErr.Error() {
			r.Recorder.Eventf(mca, corev1.EventTypeWarning, EventRenderFailed, "%v", renderErr)
		}
	case current:
		st.namespace = rendered.rendered.InstallNamespace
		st.registrations = rendered.registrations
		ws, err := render.Works(mca.Name, mca.Namespace, rendered.rendered, r.MaxWorkSize)
		if err != nil {
			st.renderErr = fmt.Errorf("ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
			break
		}
		// The pre-delete hook work is applied only when the add-on is deleted (finalize); an
		// add-on with one keeps OCM's finalizer until it has run.
		deploy, hook := ws[:0], false
		for _, w := range ws {
			if w.Name == render.PreDeleteHookWorkName(mca.Name) {
				hook = true
				continue
			}
			deploy = append(deploy, w)
		}
		ws = deploy
		if err := r.hookFinalizer(ctx, mca, hook); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.applyWorks(ctx, mca, ws, hashes, works); err != nil {
			return reconcile.Result{}, err
		}
		st.hashes = hashes
		st.rendered = len(ws)
	}
	if err := r.writeStatus(ctx, st); err != nil {
		return reconcile.Result{}, err
	}
	if st.renderErr != nil {
		return reconcile.Result{RequeueAfter: renderRetry}, nil
	}
	return reconcile.Result{}, nil
}

type renderOutput struct {
	rendered      render.Rendered
	registrations []addonv1alpha1.RegistrationConfig
}

// render renders the add-on from its desired configurations. current is false when a
// configuration has changed since it was desired (the change waits for its turn in the
// rollout: what was deployed stays).
func (r *DeployReconciler) render(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, kind addonv1alpha1.ConfigGroupResource) (out renderOutput, hashes string, err error, current bool) {
	rd := newConfigReader(r.Client, r.Cache, r.Mapper)
	in := render.Input{AddOnName: mca.Name, InstallNamespace: mca.Spec.InstallNamespace}
	hashMap := map[string]string{}
	var tmplRef *addonv1alpha1.ConfigSpecHash
	var tmpl *addonv1alpha1.AddOnTemplate
	for _, ref := range mca.Status.ConfigReferences {
		if ref.DesiredConfig == nil {
			continue
		}
		obj, err := rd.read(ctx, ref.ConfigGroupResource, ref.DesiredConfig.ConfigReferent)
		if err == nil && rd.cached != nil {
			// The cache may be behind the configuration reconciler, which read the API server:
			// what is not the desired configuration there is read again from the API server.
			if obj == nil {
				obj, err = rd.readLive(ctx, ref.ConfigGroupResource, ref.DesiredConfig.ConfigReferent)
			} else if h, _ := specHash(obj); h != ref.DesiredConfig.SpecHash {
				obj, err = rd.readLive(ctx, ref.ConfigGroupResource, ref.DesiredConfig.ConfigReferent)
			}
		}
		if err != nil {
			return out, "", fmt.Errorf("ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err), false
		}
		if obj == nil {
			return out, "", fmt.Errorf("ManagedClusterAddOn %s/%s: %s.%s %s not found", mca.Namespace, mca.Name, ref.Resource, ref.Group, refString(ref.DesiredConfig.ConfigReferent)), false
		}
		if h, _ := specHash(obj); h != ref.DesiredConfig.SpecHash {
			return out, "", nil, false
		}
		gr := ref.Resource
		if ref.Group != "" {
			gr += "." + ref.Group
		}
		hashMap[gr+"/"+ref.DesiredConfig.Namespace+"/"+ref.DesiredConfig.Name] = ref.DesiredConfig.SpecHash
		switch ref.ConfigGroupResource {
		case kind:
			d := *ref.DesiredConfig
			tmplRef = &d
			if kind == AddOnTemplateResource {
				// The object just read (and hashed) is the template: no second, cached read
				// that may not have seen a template created a moment ago.
				tmpl = &addonv1alpha1.AddOnTemplate{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, tmpl); err != nil {
					return out, "", fmt.Errorf("AddOnTemplate %s: %w", d.Name, err), false
				}
			}
		case AddOnDeploymentConfigResource:
			adc := &addonv1alpha1.AddOnDeploymentConfig{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, adc); err != nil {
				return out, "", fmt.Errorf("AddOnDeploymentConfig %s: %w", refString(ref.DesiredConfig.ConfigReferent), err), false
			}
			if in.DeploymentConfig == nil { // the first of several wins, as OCM
				in.DeploymentConfig = &adc.Spec
			}
		}
		raw, _ := json.Marshal(obj.Object)
		in.Configs = append(in.Configs, render.Config{Group: ref.Group, Resource: ref.Resource, Namespace: ref.DesiredConfig.Namespace, Name: ref.DesiredConfig.Name, Object: raw})
	}
	if tmplRef == nil {
		return out, "", fmt.Errorf("ManagedClusterAddOn %s/%s: no %s.%s configured as its template", mca.Namespace, mca.Name, kind.Resource, kind.Group), false
	}
	if in.DeploymentConfig != nil && in.DeploymentConfig.AgentInstallNamespace != "" {
		in.InstallNamespace = in.DeploymentConfig.AgentInstallNamespace
	}
	if in.InstallNamespace == "" {
		in.InstallNamespace = DefaultInstallNamespace
	}
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: mca.Namespace}, mc); err != nil {
		return out, "", fmt.Errorf("ManagedClusterAddOn %s/%s: reading its ManagedCluster: %w", mca.Namespace, mca.Name, err), false
	}
	in.Cluster = mc
	data, _ := json.Marshal(hashMap)
	hashes = string(data)

	if t := tmpl; t != nil {
		rendered, err := render.Template(t, in)
		if err != nil {
			return out, "", fmt.Errorf("AddOnTemplate %s for cluster %s: %w", t.Name, mca.Namespace, err), false
		}
		out.rendered = rendered
		if r.Registrations != nil {
			out.registrations = r.Registrations(mca.Namespace, mca.Name, t.Spec.Registration)
		}
		return out, hashes, nil, true
	}
	if ready, err := r.pluginReady(ctx, tmplRef.Name); err != nil || !ready {
		if err != nil {
			err = fmt.Errorf("ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
		}
		return out, "", err, false
	}
	rendered, err := render.Wasm(ctx, r.Registry, tmplRef.Name, in)
	if err != nil {
		return out, "", fmt.Errorf("WasmPlugin %s for cluster %s: %w", tmplRef.Name, mca.Namespace, err), false
	}
	out.rendered = rendered
	return out, hashes, nil, true
}

// pluginReady reports whether the registry serves the current spec of WasmPlugin name: its
// Ready condition is for its generation and the loaded module is the one its status names
// (a render during a reload would otherwise record the new spec hash for the old module's
// output). A plugin that failed to load for its current spec is an error naming it.
func (r *DeployReconciler) pluginReady(ctx context.Context, name string) (bool, error) {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		return false, fmt.Errorf("reading WasmPlugin %s: %w", name, err)
	}
	if wp.Spec.Type != flotillav1alpha1.PluginTypeAddOnTemplate {
		return false, fmt.Errorf("WasmPlugin %s: spec.type is %s, not AddOnTemplate", name, wp.Spec.Type)
	}
	c := meta.FindStatusCondition(wp.Status.Conditions, flotillav1alpha1.ConditionReady)
	if c == nil || c.ObservedGeneration != wp.Generation {
		return false, nil // loading
	}
	if c.Status != metav1.ConditionTrue {
		return false, fmt.Errorf("WasmPlugin %s is not ready: %s: %s", name, c.Reason, c.Message)
	}
	m, ok := r.Registry.Get(name)
	return ok && m.Digest() == wp.Status.Digest, nil
}

func (r *DeployReconciler) listWorks(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, list, client.InNamespace(mca.Namespace), client.MatchingLabels{addonv1alpha1.AddonLabelKey: mca.Name}); err != nil {
		return nil, fmt.Errorf("ManagedClusterAddOn %s/%s: listing works: %w", mca.Namespace, mca.Name, err)
	}
	out := list.Items[:0]
	for _, w := range list.Items {
		if w.Name != render.PreDeleteHookWorkName(mca.Name) {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// applyWorks applies the rendered works, owned by the ManagedClusterAddOn, and deletes the
// add-on's works no longer rendered.
func (r *DeployReconciler) applyWorks(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, ws []workv1.ManifestWork, hashes string, existing []workv1.ManifestWork) error {
	keep := map[string]bool{}
	t := true
	for i := range ws {
		w := &ws[i]
		keep[w.Name] = true
		spec, err := jsonMap(w.Spec)
		if err != nil {
			return err
		}
		// The API server defaults fields of the spec, so what was applied is recognised by
		// the hash of what was rendered, not by comparing specs.
		renderedHash := hash.MustJSON(spec)
		if cur := findWork(existing, w.Name); cur != nil && cur.Annotations[ConfigSpecHashAnnotation] == hashes &&
			cur.Annotations[renderedSpecAnnotation] == renderedHash && ownedByMCA(cur, mca) {
			continue
		}
		labels := map[string]any{}
		for k, v := range w.Labels {
			labels[k] = v
		}
		labels[addonv1alpha1.AddonLabelKey] = mca.Name
		owner := map[string]any{"apiVersion": addonv1alpha1.GroupVersion.String(), "kind": "ManagedClusterAddOn", "name": mca.Name, "uid": string(mca.UID), "blockOwnerDeletion": t}
		w.Namespace = mca.Namespace
		if err := apply.Fields(ctx, r.Client, w, apply.FieldManagerPrefix+DeployControllerName, false, map[string]any{
			"metadata": map[string]any{"labels": labels, "ownerReferences": []any{owner},
				"annotations": map[string]any{ConfigSpecHashAnnotation: hashes, renderedSpecAnnotation: renderedHash}},
			"spec": spec,
		}); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s/%s: applying ManifestWork %s: %w", mca.Namespace, mca.Name, w.Name, err)
		}
	}
	for i := range existing {
		if !keep[existing[i].Name] {
			if err := r.Client.Delete(ctx, &existing[i]); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("ManagedClusterAddOn %s/%s: deleting ManifestWork %s: %w", mca.Namespace, mca.Name, existing[i].Name, err)
			}
		}
	}
	return nil
}

// Reasons of the HookManifestCompleted condition (OCM's).
const (
	ReasonHookCompleted    = "HookManifestIsCompleted"
	ReasonHookNotCompleted = "HookManifestIsNotCompleted"
	// EventHookSkipped: a deleted add-on's pre-delete hook could not be rendered, so the
	// add-on goes without it (a Flotilla Event).
	EventHookSkipped = "AddOnPreDeleteHookSkipped"
)

// hookFinalizer keeps OCM's pre-delete finalizer on an add-on whose rendering has a
// pre-delete hook, and only then.
func (r *DeployReconciler) hookFinalizer(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, hook bool) error {
	has := controllerutil.ContainsFinalizer(mca, addonv1alpha1.AddonPreDeleteHookFinalizer)
	switch {
	case hook && !has:
		if err := apply.Finalizer(ctx, r.Client, mca, apply.FieldManagerPrefix+DeployControllerName, addonv1alpha1.AddonPreDeleteHookFinalizer); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s/%s: adding the pre-delete finalizer: %w", mca.Namespace, mca.Name, err)
		}
	case !hook && has:
		return apply.RemoveFinalizer(ctx, r.Client, mca, addonv1alpha1.AddonPreDeleteHookFinalizer)
	}
	return nil
}

// finalize runs a deleted add-on's pre-delete hook: it applies the hook work, waits until
// every hook Job completed (or Pod succeeded), as the work agent's feedback reports, then
// sets HookManifestCompleted and lets the add-on go. A hook that cannot be rendered any more
// (its template or cluster gone) is skipped with an Event rather than holding the add-on
// forever.
func (r *DeployReconciler) finalize(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) error {
	if !controllerutil.ContainsFinalizer(mca, addonv1alpha1.AddonPreDeleteHookFinalizer) {
		return nil
	}
	var kind addonv1alpha1.ConfigGroupResource
	for _, ref := range mca.Status.ConfigReferences {
		if ref.ConfigGroupResource == AddOnTemplateResource || ref.ConfigGroupResource == WasmPluginResource {
			kind = ref.ConfigGroupResource
		}
	}
	var hook *workv1.ManifestWork
	rendered, hashes, err, current := r.render(ctx, mca, kind)
	if err == nil && current {
		ws, werr := render.Works(mca.Name, mca.Namespace, rendered.rendered, r.MaxWorkSize)
		err = werr
		for i := range ws {
			if ws[i].Name == render.PreDeleteHookWorkName(mca.Name) {
				hook = &ws[i]
			}
		}
	}
	if hook == nil {
		why := "the add-on's rendering has no pre-delete hook any more"
		if err != nil {
			why = err.Error()
		} else if !current {
			why = "its configuration changed since it was last deployed"
		}
		r.Recorder.Eventf(mca, corev1.EventTypeWarning, EventHookSkipped, "pre-delete hook not run: %s", why)
		return apply.RemoveFinalizer(ctx, r.Client, mca, addonv1alpha1.AddonPreDeleteHookFinalizer)
	}
	cur := &workv1.ManifestWork{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: mca.Namespace, Name: hook.Name}, cur)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	var existing []workv1.ManifestWork
	if err == nil {
		existing = append(existing, *cur)
	}
	if err := r.applyWorks(ctx, mca, []workv1.ManifestWork{*hook}, hashes, existing); err != nil {
		return err
	}
	done := err == nil && hookCompleted(cur, hook)
	conds := append([]metav1.Condition(nil), mca.Status.Conditions...)
	c := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnHookManifestCompleted, Status: metav1.ConditionFalse,
		Reason: ReasonHookNotCompleted, Message: fmt.Sprintf("hook manifestWork %s is not completed.", hook.Name), ObservedGeneration: mca.Generation}
	if done {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonHookCompleted, fmt.Sprintf("hook manifestWork %s is completed.", hook.Name)
	}
	if meta.SetStatusCondition(&conds, c) {
		v, err := jsonMap(conds)
		if err != nil {
			return err
		}
		if err := apply.Guarded(ctx, r.Client, mca, apply.FieldManagerPrefix+DeployControllerName, true, map[string]any{"status": map[string]any{"conditions": v}}); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("ManagedClusterAddOn %s/%s: writing status: %w", mca.Namespace, mca.Name, err))
		}
	}
	if !done {
		return nil // the hook work's status changes bring the add-on back
	}
	return apply.RemoveFinalizer(ctx, r.Client, mca, addonv1alpha1.AddonPreDeleteHookFinalizer)
}

// hookCompleted reports whether the hook work (as read) ran its current rendering to the
// end: every hook Job's JobComplete feedback is True and every hook Pod's PodPhase is
// Succeeded.
func hookCompleted(cur, rendered *workv1.ManifestWork) bool {
	if cur.Annotations[renderedSpecAnnotation] != hashJSONSpec(rendered.Spec) || len(cur.Status.ResourceStatus.Manifests) < len(rendered.Spec.Workload.Manifests) {
		return false
	}
	for _, m := range cur.Status.ResourceStatus.Manifests {
		want, field := "", ""
		switch m.ResourceMeta.Kind {
		case "Job":
			field, want = workv1.WellKnownJobComplete, "True"
		case "Pod":
			field, want = workv1.WellKnownPodPhase, "Succeeded"
		default:
			continue
		}
		ok := false
		for _, v := range m.StatusFeedbacks.Values {
			if v.Name == field && v.Value.String != nil && *v.Value.String == want {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func hashJSONSpec(spec workv1.ManifestWorkSpec) string {
	v, _ := jsonMap(spec)
	return hash.MustJSON(v)
}

// renderedSpecAnnotation records the hash of the spec the deploy reconciler rendered for a
// work, so an unchanged rendering is not applied again.
const renderedSpecAnnotation = "addon.flotilla.dev/rendered-spec-hash"

func findWork(ws []workv1.ManifestWork, name string) *workv1.ManifestWork {
	for i := range ws {
		if ws[i].Name == name {
			return &ws[i]
		}
	}
	return nil
}

func ownedByMCA(w *workv1.ManifestWork, mca *addonv1alpha1.ManagedClusterAddOn) bool {
	for _, ref := range w.OwnerReferences {
		if ref.UID == mca.UID {
			return true
		}
	}
	return false
}

// deployStatus is what one reconcile learned about a ManagedClusterAddOn's deployment.
type deployStatus struct {
	mca    *addonv1alpha1.ManagedClusterAddOn
	works  []workv1.ManifestWork // as cached before this reconcile's applies
	health string
	// hashes is the config-spec-hash the works were rendered with now ("" when not rendered).
	hashes        string
	rendered      int
	renderErr     error
	namespace     string
	registrations []addonv1alpha1.RegistrationConfig
}

// worksState sums up the cached works of the current rendering: all there and applied and
// available for their current generation (done), and the first message of a work not applied.
func (s *deployStatus) worksState() (done bool, applied bool, notApplied string) {
	if s.hashes == "" || len(s.works) != s.rendered || s.rendered == 0 {
		return false, false, ""
	}
	applied, done = true, true
	for i := range s.works {
		w := &s.works[i]
		if w.Annotations[ConfigSpecHashAnnotation] != s.hashes {
			return false, false, ""
		}
		a := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
		if a == nil || a.ObservedGeneration != w.Generation || a.Status != metav1.ConditionTrue {
			applied, done = false, false
			if a != nil && a.Status == metav1.ConditionFalse && notApplied == "" {
				notApplied = fmt.Sprintf("ManifestWork %s: %s", w.Name, a.Message)
			}
			continue
		}
		if av := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable); av == nil || av.Status != metav1.ConditionTrue || av.ObservedGeneration != w.Generation {
			done = false
		}
	}
	return done, applied, notApplied
}

func (r *DeployReconciler) writeStatus(ctx context.Context, s *deployStatus) error {
	mca := s.mca
	conds := append([]metav1.Condition(nil), mca.Status.Conditions...)
	refs := append([]addonv1alpha1.ConfigReference(nil), mca.Status.ConfigReferences...)
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: mca.Generation})
	}
	// An upgrade is a change from something applied; once everything desired is applied, the
	// reason that completed it stays.
	upgrade, pending := false, false
	for _, ref := range refs {
		if ref.DesiredConfig != nil && (ref.LastAppliedConfig == nil || *ref.LastAppliedConfig != *ref.DesiredConfig) {
			pending = true
			upgrade = upgrade || ref.LastAppliedConfig != nil
		}
	}
	if p := condition(conds, addonv1alpha1.ManagedClusterAddOnConditionProgressing); !pending && p != nil &&
		(p.Reason == addonv1alpha1.ProgressingReasonUpgradeSucceed || p.Reason == addonv1alpha1.ProgressingReasonUpgradeFailed || p.Reason == addonv1alpha1.ProgressingReasonUpgrading) {
		upgrade = true
	}
	failed, succeed, running, verb := addonv1alpha1.ProgressingReasonInstallFailed, addonv1alpha1.ProgressingReasonInstallSucceed, addonv1alpha1.ProgressingReasonInstalling, "install"
	if upgrade {
		failed, succeed, running, verb = addonv1alpha1.ProgressingReasonUpgradeFailed, addonv1alpha1.ProgressingReasonUpgradeSucceed, addonv1alpha1.ProgressingReasonUpgrading, "upgrade"
	}
	done, workApplied, notApplied := s.worksState()
	switch {
	case s.renderErr != nil && pending:
		set(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, failed, s.renderErr.Error())
	case s.renderErr != nil:
		// Everything desired is deployed: a render failing now (a plugin reloading, a read
		// failing) changes nothing deployed, so it is an Event, not a failed upgrade.
	case s.hashes == "":
		// a configuration changed and waits for its turn: the current state stands
	case done:
		set(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, succeed, verb+" completed with no errors.")
		for i := range refs {
			if refs[i].DesiredConfig != nil {
				d := *refs[i].DesiredConfig
				refs[i].LastAppliedConfig = &d
			}
		}
	default:
		msg := verb + "ing."
		if notApplied != "" {
			msg += " " + notApplied
		}
		set(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionTrue, running, msg)
	}
	if s.hashes != "" {
		switch {
		case workApplied:
			set(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied, "manifests of addon are applied successfully")
		case notApplied != "":
			set(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed, notApplied)
		}
	}
	mode := addonv1alpha1.HealthCheckModeCustomized
	if s.health == HealthLease {
		mode = addonv1alpha1.HealthCheckModeLease
	} else if s.health != HealthNone && len(s.works) > 0 {
		status, reason, msg := render.Availability(s.health, s.works)
		set(addonv1alpha1.ManagedClusterAddOnConditionAvailable, status, reason, msg)
	}
	namespace := mca.Status.Namespace
	if s.namespace != "" {
		namespace = s.namespace
	}
	regs := mca.Status.Registrations
	if s.hashes != "" {
		regs = s.registrations
	}
	if reflect.DeepEqual(conds, mca.Status.Conditions) && reflect.DeepEqual(refs, mca.Status.ConfigReferences) &&
		namespace == mca.Status.Namespace && mode == mca.Status.HealthCheck.Mode && reflect.DeepEqual(regs, mca.Status.Registrations) {
		return nil
	}
	status := map[string]any{
		"conditions": conds, "configReferences": refs, "namespace": namespace,
		"healthCheck":   map[string]any{"mode": string(mode)},
		"registrations": regs,
	}
	v, err := jsonMap(status)
	if err != nil {
		return err
	}
	if regs == nil {
		v.(map[string]any)["registrations"] = []any{}
	}
	if err := apply.Guarded(ctx, r.Client, mca, apply.FieldManagerPrefix+DeployControllerName, true, map[string]any{"status": v}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("ManagedClusterAddOn %s/%s: writing status: %w", mca.Namespace, mca.Name, err))
	}
	return nil
}

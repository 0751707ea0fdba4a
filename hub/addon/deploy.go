package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
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
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
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
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &addonv1alpha1.ManagedClusterAddOn{}, mcaHostingIndex, func(o client.Object) []string {
		if h := hostingCluster(o.(*addonv1alpha1.ManagedClusterAddOn)); h != "" {
			return []string{h}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("addon deploy: indexing ManagedClusterAddOns by hosting cluster: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(DeployControllerName).
		// Each reconcile is one cluster's add-on, independent of the others, and mostly waits
		// on API round trips: with 8 at once, 5,000 clusters installing a template add-on
		// went at 3 a second with kube-apiserver's CPU to spare (make bench-fleet).
		WithOptions(controller.Options{MaxConcurrentReconciles: 32}).
		For(&addonv1alpha1.ManagedClusterAddOn{}, builder.WithPredicates(predicate.Or(mcaDeployChanged(), hostingChanged()))).
		Watches(&workv1.ManifestWork{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if name := o.GetLabels()[addonv1alpha1.AddonLabelKey]; name != "" {
				// A hosted work is in its hosting cluster's namespace; its add-on's is its label.
				ns := o.GetNamespace()
				if addonNS := o.GetLabels()[addonv1alpha1.AddonNamespaceLabelKey]; addonNS != "" {
					ns = addonNS
				}
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
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
			// Its own add-ons, and those it hosts (it came, went or is being deleted).
			var out []reconcile.Request
			for _, opt := range []client.ListOption{client.InNamespace(o.GetName()), client.MatchingFields{mcaHostingIndex: o.GetName()}} {
				list := &addonv1alpha1.ManagedClusterAddOnList{}
				if err := r.Client.List(ctx, list, opt); err != nil {
					continue
				}
				for i := range list.Items {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
				}
			}
			return out
		}), builder.WithPredicates(predicate.Or(clusterRenderInputChanged(), deletionChanged()))).
		Complete(apply.Quiet(r))
}

// mcaHostingIndex indexes ManagedClusterAddOns by their hosting cluster (hosted mode).
const mcaHostingIndex = "addon.hostingCluster"

// hostingCluster is the hosting cluster of an add-on in hosted mode (OCM's
// addon.open-cluster-management.io/hosting-cluster-name annotation), "" in default mode.
func hostingCluster(mca *addonv1alpha1.ManagedClusterAddOn) string {
	return mca.Annotations[addonv1alpha1.HostingClusterNameAnnotationKey]
}

// hostingChanged passes an add-on whose hosting cluster annotation changed.
func hostingChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetAnnotations()[addonv1alpha1.HostingClusterNameAnnotationKey] != e.ObjectNew.GetAnnotations()[addonv1alpha1.HostingClusterNameAnnotationKey]
	}}
}

// deletionChanged passes an object whose deletion started.
func deletionChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp())
	}}
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
	hosted, err := r.listHostedWorks(ctx, mca)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := &deployStatus{mca: mca, works: works, health: healthMode(cma)}

	// Hosted mode: the hosting cluster gets the hosted works only while it is a ManagedCluster
	// of the hub; otherwise, and in default mode, no hosted work stays.
	hosting, err := r.hosting(ctx, mca, st)
	if err != nil {
		return reconcile.Result{}, err
	}
	if hosting == "" {
		if err := r.cleanupHosted(ctx, mca, hosted); err != nil {
			return reconcile.Result{}, err
		}
	} else {
		st.hosted = withoutWork(hosted, render.PreDeleteHookHostingWorkName(mca.Name, mca.Namespace))
	}

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
		ws, hws, err := r.works(mca, rendered.rendered, st.hostedMode, hosting)
		if err != nil {
			st.buildErr = err
			st.renderErr = fmt.Errorf("ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
			break
		}
		// Pre-delete hook works are applied only when the add-on is deleted (finalize); an
		// add-on with one keeps OCM's finalizer for it until it has run, and one with hosted
		// works OCM's finalizer that removes them (they cannot be owned across namespaces).
		var hook, hostingHook bool
		ws, hook = cutWork(ws, render.PreDeleteHookWorkName(mca.Name))
		hws, hostingHook = cutWork(hws, render.PreDeleteHookHostingWorkName(mca.Name, mca.Namespace))
		if err := r.setFinalizers(ctx, mca, map[string]bool{
			addonv1alpha1.AddonPreDeleteHookFinalizer:        hook,
			addonv1alpha1.AddonHostingPreDeleteHookFinalizer: hostingHook,
			addonv1alpha1.AddonHostingManifestFinalizer:      hosting != "",
		}); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.applyWorks(ctx, mca, ws, hashes, works); err != nil {
			return reconcile.Result{}, err
		}
		if hosting != "" {
			if err := r.applyWorks(ctx, mca, hws, hashes, st.hosted); err != nil {
				return reconcile.Result{}, err
			}
		}
		st.hashes = hashes
		st.rendered, st.renderedHosted = len(ws), len(hws)
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
	if ready, err := wasmplugin.Serving(ctx, r.Client, r.Registry, tmplRef.Name, flotillav1alpha1.PluginTypeAddOnTemplate); err != nil || !ready {
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

// listWorks lists the add-on's deploy works in its cluster's namespace (not the works there
// of the add-ons the cluster hosts).
func (r *DeployReconciler) listWorks(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]workv1.ManifestWork, error) {
	own, err := labels.NewRequirement(addonv1alpha1.AddonNamespaceLabelKey, selection.DoesNotExist, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.SelectorFromSet(labels.Set{addonv1alpha1.AddonLabelKey: mca.Name}).Add(*own)
	list := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, list, client.InNamespace(mca.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("ManagedClusterAddOn %s/%s: listing works: %w", mca.Namespace, mca.Name, err)
	}
	return sortedWorks(withoutWork(list.Items, render.PreDeleteHookWorkName(mca.Name))), nil
}

// listHostedWorks lists the add-on's works in any hosting cluster's namespace (its current
// hosting cluster's, and those a former one kept), its hosted pre-delete hook included.
func (r *DeployReconciler) listHostedWorks(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) ([]workv1.ManifestWork, error) {
	list := &workv1.ManifestWorkList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{addonv1alpha1.AddonLabelKey: mca.Name, addonv1alpha1.AddonNamespaceLabelKey: mca.Namespace}); err != nil {
		return nil, fmt.Errorf("ManagedClusterAddOn %s/%s: listing hosted works: %w", mca.Namespace, mca.Name, err)
	}
	return sortedWorks(list.Items), nil
}

func sortedWorks(ws []workv1.ManifestWork) []workv1.ManifestWork {
	sort.Slice(ws, func(i, j int) bool { return ws[i].Namespace+"/"+ws[i].Name < ws[j].Namespace+"/"+ws[j].Name })
	return ws
}

// withoutWork is ws without work name (a copy).
func withoutWork(ws []workv1.ManifestWork, name string) []workv1.ManifestWork {
	out, _ := cutWork(append([]workv1.ManifestWork(nil), ws...), name)
	return out
}

// cutWork removes work name from ws (in place) and says whether it was there.
func cutWork(ws []workv1.ManifestWork, name string) ([]workv1.ManifestWork, bool) {
	out, found := ws[:0], false
	for _, w := range ws {
		if w.Name == name {
			found = true
			continue
		}
		out = append(out, w)
	}
	return out, found
}

// works puts a rendered add-on into its works: in default mode all in the cluster's
// namespace; in hosted mode the manifests located on the managed cluster there and, when the
// hosting cluster is valid (hosting is not ""), the hosting ones in hosting's namespace.
func (r *DeployReconciler) works(mca *addonv1alpha1.ManagedClusterAddOn, rendered render.Rendered, hostedMode bool, hosting string) (ws, hws []workv1.ManifestWork, err error) {
	managedPart, hostingPart := rendered, render.Rendered{}
	if hostedMode {
		if managedPart, hostingPart, err = render.SplitHosted(rendered); err != nil {
			return nil, nil, err
		}
	}
	if ws, err = render.Works(mca.Name, mca.Namespace, managedPart, r.MaxWorkSize); err != nil {
		return nil, nil, err
	}
	if hosting != "" {
		if hws, err = render.HostingWorks(mca.Name, mca.Namespace, hosting, hostingPart, r.MaxWorkSize); err != nil {
			return nil, nil, err
		}
	}
	return ws, hws, nil
}

// hosting checks the hosting cluster of an add-on in hosted mode and records it in st: it
// returns the cluster to deploy hosted works to, "" in default mode and when the hosting
// cluster is not a ManagedCluster of the hub (HostingClusterValidity False, as OCM) or is
// being deleted (its works are being removed with it).
func (r *DeployReconciler) hosting(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, st *deployStatus) (string, error) {
	name := hostingCluster(mca)
	if name == "" {
		return "", nil
	}
	st.hostedMode = true
	hc := &clusterv1.ManagedCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, hc)
	if apierrors.IsNotFound(err) {
		st.validity = &metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnHostingClusterValidity, Status: metav1.ConditionFalse,
			Reason: addonv1alpha1.HostingClusterValidityReasonInvalid, Message: fmt.Sprintf("hosting cluster %s is not a managed cluster of the hub", name)}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ManagedClusterAddOn %s/%s: reading its hosting cluster %s: %w", mca.Namespace, mca.Name, name, err)
	}
	st.validity = &metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnHostingClusterValidity, Status: metav1.ConditionTrue,
		Reason: addonv1alpha1.HostingClusterValidityReasonValid, Message: fmt.Sprintf("hosting cluster %s is a managed cluster of the hub", name)}
	if !hc.DeletionTimestamp.IsZero() {
		return "", nil
	}
	return name, nil
}

// cleanupHosted deletes the add-on's hosted works, hooks included, and then lets go of the
// finalizers that waited for them.
func (r *DeployReconciler) cleanupHosted(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, hosted []workv1.ManifestWork) error {
	for i := range hosted {
		if err := r.Client.Delete(ctx, &hosted[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("ManagedClusterAddOn %s/%s: deleting hosted ManifestWork %s/%s: %w", mca.Namespace, mca.Name, hosted[i].Namespace, hosted[i].Name, err)
		}
	}
	for _, f := range []string{addonv1alpha1.AddonHostingPreDeleteHookFinalizer, addonv1alpha1.AddonHostingManifestFinalizer} {
		if err := apply.RemoveFinalizer(ctx, r.Client, mca, f); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
		}
	}
	return nil
}

// applyWorks applies the rendered works, owned by the ManagedClusterAddOn when in its
// namespace (a hosted work in another namespace cannot be: the add-on's finalizer removes
// those), and deletes the existing works no longer rendered.
func (r *DeployReconciler) applyWorks(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, ws []workv1.ManifestWork, hashes string, existing []workv1.ManifestWork) error {
	keep := map[string]bool{}
	t := true
	for i := range ws {
		w := &ws[i]
		keep[w.Namespace+"/"+w.Name] = true
		owned := w.Namespace == mca.Namespace
		spec, err := jsonMap(w.Spec)
		if err != nil {
			return err
		}
		// The API server defaults fields of the spec, so what was applied is recognised by
		// the hash of what was rendered, not by comparing specs.
		renderedHash := hash.MustJSON(spec)
		if cur := findWork(existing, w.Namespace, w.Name); cur != nil && cur.Annotations[ConfigSpecHashAnnotation] == hashes &&
			cur.Annotations[renderedSpecAnnotation] == renderedHash && (!owned || ownedByMCA(cur, mca)) {
			continue
		}
		lbls := map[string]any{}
		for k, v := range w.Labels {
			lbls[k] = v
		}
		lbls[addonv1alpha1.AddonLabelKey] = mca.Name
		md := map[string]any{"labels": lbls, "annotations": map[string]any{ConfigSpecHashAnnotation: hashes, renderedSpecAnnotation: renderedHash}}
		if owned {
			md["ownerReferences"] = []any{map[string]any{"apiVersion": addonv1alpha1.GroupVersion.String(), "kind": "ManagedClusterAddOn", "name": mca.Name, "uid": string(mca.UID), "blockOwnerDeletion": t}}
		}
		if err := apply.Fields(ctx, r.Client, w, apply.FieldManagerPrefix+DeployControllerName, false, map[string]any{"metadata": md, "spec": spec}); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s/%s: applying ManifestWork %s/%s: %w", mca.Namespace, mca.Name, w.Namespace, w.Name, err)
		}
	}
	for i := range existing {
		if !keep[existing[i].Namespace+"/"+existing[i].Name] {
			if err := r.Client.Delete(ctx, &existing[i]); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("ManagedClusterAddOn %s/%s: deleting ManifestWork %s/%s: %w", mca.Namespace, mca.Name, existing[i].Namespace, existing[i].Name, err)
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

// deployFinalizers are the finalizers the deploy reconciler keeps on an add-on, all applied
// together (an apply of some would drop the others it holds).
var deployFinalizers = []string{
	addonv1alpha1.AddonPreDeleteHookFinalizer,
	addonv1alpha1.AddonHostingPreDeleteHookFinalizer,
	addonv1alpha1.AddonHostingManifestFinalizer,
}

// setFinalizers keeps OCM's finalizers on an add-on as want says: the pre-delete ones while
// its rendering has a pre-delete hook (managed, hosting), the hosting-manifests one while it
// has hosted works.
func (r *DeployReconciler) setFinalizers(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, want map[string]bool) error {
	var keep []any
	missing := false
	for _, f := range deployFinalizers {
		if want[f] {
			keep = append(keep, f)
			missing = missing || !controllerutil.ContainsFinalizer(mca, f)
		}
	}
	if missing {
		if err := apply.Fields(ctx, r.Client, mca, apply.FieldManagerPrefix+DeployControllerName, false, map[string]any{
			"metadata": map[string]any{"finalizers": keep},
		}); err != nil {
			return fmt.Errorf("ManagedClusterAddOn %s/%s: adding finalizers: %w", mca.Namespace, mca.Name, err)
		}
	}
	for _, f := range deployFinalizers {
		if !want[f] {
			if err := apply.RemoveFinalizer(ctx, r.Client, mca, f); err != nil {
				return fmt.Errorf("ManagedClusterAddOn %s/%s: %w", mca.Namespace, mca.Name, err)
			}
		}
	}
	return nil
}

// finalize lets a deleted add-on go: its pre-delete hooks run first (runHooks), then its
// hosted works are deleted (its managed works go with it, by their owner references).
func (r *DeployReconciler) finalize(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) error {
	if controllerutil.ContainsFinalizer(mca, addonv1alpha1.AddonPreDeleteHookFinalizer) || controllerutil.ContainsFinalizer(mca, addonv1alpha1.AddonHostingPreDeleteHookFinalizer) {
		if done, err := r.runHooks(ctx, mca); err != nil || !done {
			return err
		}
	}
	if !controllerutil.ContainsFinalizer(mca, addonv1alpha1.AddonHostingManifestFinalizer) {
		return nil
	}
	hosted, err := r.listHostedWorks(ctx, mca)
	if err != nil {
		return err
	}
	return r.cleanupHosted(ctx, mca, hosted)
}

// runHooks runs a deleted add-on's pre-delete hooks, each whose finalizer it holds: it
// applies the hook work (in the cluster's namespace; in hosted mode the hosting one in the
// hosting cluster's), waits until every hook Job completed (or Pod succeeded), as the work
// agent's feedback reports, then sets HookManifestCompleted and removes the finalizers. A
// hook that cannot be rendered any more (its template or cluster gone, the hosting cluster
// invalid) is skipped with an Event rather than holding the add-on forever.
func (r *DeployReconciler) runHooks(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn) (bool, error) {
	var kind addonv1alpha1.ConfigGroupResource
	for _, ref := range mca.Status.ConfigReferences {
		if ref.ConfigGroupResource == AddOnTemplateResource || ref.ConfigGroupResource == WasmPluginResource {
			kind = ref.ConfigGroupResource
		}
	}
	st := &deployStatus{}
	hosting, herr := r.hosting(ctx, mca, st)
	hooks := map[string]*workv1.ManifestWork{}
	rendered, hashes, err, current := r.render(ctx, mca, kind)
	if err == nil && herr != nil {
		err = herr
	}
	if err == nil && current {
		ws, hws, werr := r.works(mca, rendered.rendered, st.hostedMode, hosting)
		err = werr
		for i := range ws {
			if ws[i].Name == render.PreDeleteHookWorkName(mca.Name) {
				hooks[addonv1alpha1.AddonPreDeleteHookFinalizer] = &ws[i]
			}
		}
		for i := range hws {
			if hws[i].Name == render.PreDeleteHookHostingWorkName(mca.Name, mca.Namespace) {
				hooks[addonv1alpha1.AddonHostingPreDeleteHookFinalizer] = &hws[i]
			}
		}
	}
	done := true
	var pending, completed *workv1.ManifestWork
	for _, f := range deployFinalizers[:2] {
		if !controllerutil.ContainsFinalizer(mca, f) {
			continue
		}
		hook := hooks[f]
		if hook == nil {
			why := "the add-on's rendering has no such pre-delete hook any more"
			switch {
			case err != nil:
				why = err.Error()
			case !current:
				why = "its configuration changed since it was last deployed"
			case f == addonv1alpha1.AddonHostingPreDeleteHookFinalizer && hosting == "":
				why = fmt.Sprintf("its hosting cluster %q is not a managed cluster of the hub, or is being deleted", hostingCluster(mca))
			}
			r.Recorder.Eventf(mca, corev1.EventTypeWarning, EventHookSkipped, "pre-delete hook not run: %s", why)
			if err := apply.RemoveFinalizer(ctx, r.Client, mca, f); err != nil {
				return false, err
			}
			continue
		}
		ok, err := r.runHook(ctx, mca, hook, hashes)
		if err != nil {
			return false, err
		}
		if ok {
			completed = hook
		} else if pending == nil {
			pending = hook
		}
		done = done && ok
	}
	if completed != nil || pending != nil {
		conds := append([]metav1.Condition(nil), mca.Status.Conditions...)
		c := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnHookManifestCompleted, Status: metav1.ConditionTrue,
			Reason: ReasonHookCompleted, ObservedGeneration: mca.Generation}
		if pending != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonHookNotCompleted, fmt.Sprintf("hook manifestWork %s is not completed.", pending.Name)
		} else {
			c.Message = fmt.Sprintf("hook manifestWork %s is completed.", completed.Name)
		}
		if meta.SetStatusCondition(&conds, c) {
			v, err := jsonMap(conds)
			if err != nil {
				return false, err
			}
			if err := apply.Guarded(ctx, r.Client, mca, apply.FieldManagerPrefix+DeployControllerName, true, map[string]any{"status": map[string]any{"conditions": v}}); err != nil {
				return false, client.IgnoreNotFound(fmt.Errorf("ManagedClusterAddOn %s/%s: writing status: %w", mca.Namespace, mca.Name, err))
			}
		}
	}
	if !done {
		return false, nil // the hook works' status changes bring the add-on back
	}
	for _, f := range deployFinalizers[:2] {
		if err := apply.RemoveFinalizer(ctx, r.Client, mca, f); err != nil {
			return false, err
		}
	}
	return true, nil
}

// runHook applies one pre-delete hook work and reports whether it completed.
func (r *DeployReconciler) runHook(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, hook *workv1.ManifestWork, hashes string) (bool, error) {
	cur := &workv1.ManifestWork{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: hook.Namespace, Name: hook.Name}, cur)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	var existing []workv1.ManifestWork
	if err == nil {
		existing = append(existing, *cur)
	}
	if err := r.applyWorks(ctx, mca, []workv1.ManifestWork{*hook}, hashes, existing); err != nil {
		return false, err
	}
	return err == nil && hookCompleted(cur, hook), nil
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

func findWork(ws []workv1.ManifestWork, namespace, name string) *workv1.ManifestWork {
	for i := range ws {
		if ws[i].Namespace == namespace && ws[i].Name == name {
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
	mca *addonv1alpha1.ManagedClusterAddOn
	// works and hosted are the deploy works in the cluster's namespace and in the hosting
	// cluster's (hosted mode, valid hosting cluster), as cached before this reconcile's applies.
	works, hosted []workv1.ManifestWork
	health        string
	// hashes is the config-spec-hash the works were rendered with now ("" when not rendered).
	hashes                   string
	rendered, renderedHosted int
	renderErr                error
	// buildErr: the rendering could not be put into works (renderErr says it too).
	buildErr      error
	namespace     string
	registrations []addonv1alpha1.RegistrationConfig
	// hostedMode: the add-on names a hosting cluster; validity is its HostingClusterValidity.
	hostedMode bool
	validity   *metav1.Condition
}

// worksState sums up cached works of the current rendering (n of them rendered): all there
// and applied and available for their current generation (done), and the first message of a
// work not applied. No work rendered is done.
func (s *deployStatus) worksState(works []workv1.ManifestWork, n int) (done bool, applied bool, notApplied string) {
	if s.hashes == "" || len(works) != n {
		return false, false, ""
	}
	applied, done = true, true
	for i := range works {
		w := &works[i]
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
	done, workApplied, mNotApplied := s.worksState(s.works, s.rendered)
	hDone, hApplied, hNotApplied := s.worksState(s.hosted, s.renderedHosted)
	// Progress counts the hosted works too; nothing rendered at all is not done.
	done = done && hDone && s.rendered+s.renderedHosted > 0
	notApplied := mNotApplied
	if notApplied == "" {
		notApplied = hNotApplied
	}
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
	// ManifestApplied is of the works in the cluster's namespace, HostingManifestApplied of
	// the hosted ones, as OCM reports them; a rendering that cannot be put into works fails
	// both.
	applied := func(t string, ok bool, msg string, n int) {
		switch {
		case s.buildErr != nil:
			set(t, metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed, "failed to build manifestwork: "+s.buildErr.Error())
		case s.hashes == "":
		case ok && n == 0:
			set(t, metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied, "no manifest need to apply")
		case ok:
			set(t, metav1.ConditionTrue, addonv1alpha1.AddonManifestAppliedReasonManifestsApplied, "manifests of addon are applied successfully")
		case msg != "":
			set(t, metav1.ConditionFalse, addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed, msg)
		}
	}
	if s.rendered > 0 || s.hostedMode || s.buildErr != nil {
		applied(addonv1alpha1.ManagedClusterAddOnManifestApplied, workApplied, mNotApplied, s.rendered)
	}
	if s.hostedMode {
		meta.SetStatusCondition(&conds, *s.validity)
		meta.FindStatusCondition(conds, s.validity.Type).ObservedGeneration = mca.Generation
		if s.validity.Status == metav1.ConditionTrue {
			applied(addonv1alpha1.ManagedClusterAddOnHostingManifestApplied, hApplied, hNotApplied, s.renderedHosted)
		}
	}
	// Back in default mode, the hosted conditions stay as they were, as in OCM (the
	// configuration reconciler's apply holds them too: this one could not remove them).
	mode := addonv1alpha1.HealthCheckModeCustomized
	if s.health == HealthLease {
		mode = addonv1alpha1.HealthCheckModeLease
	} else if all := append(append([]workv1.ManifestWork(nil), s.works...), s.hosted...); s.health != HealthNone && len(all) > 0 {
		status, reason, msg := render.Availability(s.health, all)
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

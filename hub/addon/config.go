package addon

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
)

// ConfigControllerName names the configuration reconciler and its field manager.
const ConfigControllerName = "addon-config"

// EventRolloutStopped is the Event a ClusterManagementAddOn gets when maxFailures stops the
// rollout of a configuration change.
const EventRolloutStopped = "AddOnRolloutStopped"

// parallelWrites bounds the ManagedClusterAddOn writes (status, creates) of one reconcile in flight.
const parallelWrites = 16

// ConfigReconciler resolves the configurations of an add-on's ManagedClusterAddOns and rolls
// their changes out.
type ConfigReconciler struct {
	Client   client.Client
	Mapper   meta.RESTMapper
	Recorder record.EventRecorder
	Now      func() time.Time
}

// SetupWithManager watches ClusterManagementAddOns, ManagedClusterAddOns, placements,
// decisions and the configuration kinds the hub serves.
func (r *ConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	byPlacement := func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetName()
		if _, ok := o.(*clusterv1beta1.PlacementDecision); ok {
			name = o.GetLabels()[clusterv1beta1.PlacementLabel]
		}
		return cmasOfPlacement(ctx, r.Client, o.GetNamespace(), name)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ConfigControllerName).
		For(&addonv1alpha1.ClusterManagementAddOn{}).
		Watches(&addonv1alpha1.ManagedClusterAddOn{}, handler.EnqueueRequestsFromMapFunc(byAddOnName), builder.WithPredicates(mcaRolloutChanged())).
		Watches(&clusterv1beta1.Placement{}, handler.EnqueueRequestsFromMapFunc(byPlacement)).
		Watches(&clusterv1beta1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(byPlacement)).
		Watches(&addonv1alpha1.AddOnDeploymentConfig{}, handler.EnqueueRequestsFromMapFunc(r.allManaged)).
		Watches(&addonv1alpha1.AddOnTemplate{}, handler.EnqueueRequestsFromMapFunc(r.allManaged)).
		Watches(&flotillav1alpha1.WasmPlugin{}, handler.EnqueueRequestsFromMapFunc(r.allManaged)).
		Complete(apply.Quiet(r))
}

// allManaged enqueues every managed add-on: a configuration changed, and configurations are
// few and shared.
func (r *ConfigReconciler) allManaged(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &addonv1alpha1.ClusterManagementAddOnList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if managed(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// target is what one ManagedClusterAddOn should be configured with.
type target struct {
	placement int // index in the install strategy's placements, -1 for none
	want      []resolvedConfig
	err       error
}

// Reconcile resolves, rolls out and reports one add-on's configurations.
func (r *ConfigReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, cma); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cma.DeletionTimestamp.IsZero() || !managed(cma) {
		return reconcile.Result{}, nil
	}
	now := r.Now()
	mcas, err := listMCAs(ctx, r.Client, cma.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	rd := newConfigReader(r.Client, nil, r.Mapper)

	var placements []*decisions.Placement
	assigned := map[string]int{}
	if cma.Spec.InstallStrategy.Type == addonv1alpha1.AddonInstallStrategyPlacements {
		for i, ps := range cma.Spec.InstallStrategy.Placements {
			p, err := decisions.Read(ctx, r.Client, ps.Namespace, ps.Name)
			if err != nil {
				return reconcile.Result{}, fmt.Errorf("ClusterManagementAddOn %s: %w", cma.Name, err)
			}
			placements = append(placements, p)
			// A cluster several placements select takes the last one's configs and rollout,
			// as in OCM.
			for _, c := range p.Clusters() {
				assigned[c] = i
			}
		}
	}

	targets := map[string]*target{}
	for cluster, mca := range mcas {
		t := &target{placement: -1}
		var ps *addonv1alpha1.PlacementStrategy
		if i, ok := assigned[cluster]; ok {
			t.placement, ps = i, &cma.Spec.InstallStrategy.Placements[i]
		}
		l := placementConfigs(cma, ps)
		l.override(mca.Spec.Configs, mca.Namespace)
		t.want, t.err = rd.resolve(ctx, l)
		targets[cluster] = t
	}

	// Which clusters take their target now: every cluster outside a placement, and those
	// each placement's rollout admits.
	admit := map[string]bool{}
	for cluster, t := range targets {
		if t.placement < 0 {
			admit[cluster] = true
		}
	}
	results := make([]rollout.Result, len(placements))
	var recheck time.Duration
	for i, p := range placements {
		states := map[string]rollout.ClusterState{}
		for _, c := range p.Clusters() {
			t := targets[c]
			switch {
			case assigned[c] != i || t == nil:
				// Another placement rolls it out, or it has no ManagedClusterAddOn (yet): it
				// must not hold a slot of this rollout.
				states[c] = rollout.ClusterState{Status: rollout.Skip}
			case t.err != nil:
				// A configuration it cannot resolve counts against maxFailures.
				states[c] = rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: now}
			default:
				states[c] = clusterState(mcas[c], t.want)
			}
		}
		res, err := rollout.Evaluate(rollout.Input{Strategy: cma.Spec.InstallStrategy.Placements[i].RolloutStrategy, Groups: p.Groups, States: states, Now: now})
		if err != nil {
			// A strategy that does not parse rolls nothing out; the CMA says why.
			res = rollout.Result{Phase: rollout.PhaseStopped, Message: err.Error()}
		}
		results[i] = res
		for _, c := range res.ToUpdate {
			admit[c] = true
		}
		if res.RecheckAfter > 0 && (recheck == 0 || res.RecheckAfter < recheck) {
			recheck = res.RecheckAfter
		}
	}

	// The ManagedClusterAddOns are written in parallel: an All rollout writes every one.
	var (
		mu   sync.Mutex
		errs []error
		g    errgroup.Group
	)
	g.SetLimit(parallelWrites)
	for cluster, mca := range mcas {
		g.Go(func() error {
			if err := r.writeMCA(ctx, cma, mca, targets[cluster], admit[cluster], now); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := r.writeCMA(ctx, cma, rd, placements, assigned, results, mcas, targets); err != nil {
		errs = append(errs, err)
	}
	return reconcile.Result{RequeueAfter: recheck}, joinErrs(errs)
}

// clusterState is where a ManagedClusterAddOn stands in the rollout of want. Applied beats
// a failure reason (a transient render error on an up-to-date add-on is no failed upgrade).
// The progressDeadline clock starts when the cluster was admitted to the rollout, which is
// Configured's lastTransitionTime (see configure): whether or not whoever deploys the add-on
// ever reports Installing or Upgrading, a cluster that does not get there in time times out.
// The minSuccessTime soak starts when the deploy reported success, else when it was admitted.
func clusterState(mca *addonv1alpha1.ManagedClusterAddOn, want []resolvedConfig) rollout.ClusterState {
	if mca == nil || !sameDesired(mca.Status.ConfigReferences, want) {
		return rollout.ClusterState{Status: rollout.ToApply}
	}
	cfg := condition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured)
	if cfg == nil || cfg.Status != metav1.ConditionTrue {
		return rollout.ClusterState{Status: rollout.ToApply}
	}
	p := condition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
	if applied(mca.Status.ConfigReferences) {
		since := cfg.LastTransitionTime.Time
		if p != nil && (p.Reason == addonv1alpha1.ProgressingReasonInstallSucceed || p.Reason == addonv1alpha1.ProgressingReasonUpgradeSucceed) {
			since = p.LastTransitionTime.Time
		}
		return rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: since}
	}
	if p != nil && failedReason(p.Reason) {
		return rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: p.LastTransitionTime.Time}
	}
	return rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: cfg.LastTransitionTime.Time}
}

func failedReason(reason string) bool {
	switch reason {
	case addonv1alpha1.ProgressingReasonInstallFailed, addonv1alpha1.ProgressingReasonUpgradeFailed, addonv1alpha1.ProgressingReasonFailed:
		return true
	}
	return false
}

// configure is a ManagedClusterAddOn's configReferences and conditions with its Configured
// condition for target t. An admitted cluster gets the desired configurations, and Configured
// True with lastTransitionTime now even when it was True for the configurations before: the
// cluster entered the rollout now, and clusterState counts progressDeadline from then. It is
// kept in the same write as the configurations, so it survives reconciles and restarts.
func configure(mca *addonv1alpha1.ManagedClusterAddOn, t *target, admitted bool, now time.Time) ([]addonv1alpha1.ConfigReference, []metav1.Condition) {
	refs := mca.Status.ConfigReferences
	conds := append([]metav1.Condition(nil), mca.Status.Conditions...)
	set := func(status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: status, Reason: reason, Message: msg, ObservedGeneration: mca.Generation})
	}
	switch {
	case t.err != nil:
		set(metav1.ConditionFalse, ReasonConfigInvalid, t.err.Error())
	case sameDesired(refs, t.want):
		set(metav1.ConditionTrue, ReasonConfigured, "Configurations configured")
	case admitted:
		refs = desiredReferences(refs, t.want)
		set(metav1.ConditionTrue, ReasonConfigured, "Configurations configured")
		meta.FindStatusCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionConfigured).LastTransitionTime = metav1.NewTime(now)
	default:
		set(metav1.ConditionFalse, ReasonNotConfigured, "Configurations updated and not configured yet")
	}
	return refs, conds
}

// writeMCA writes a ManagedClusterAddOn's configReferences, supportedConfigs and Configured
// condition (see configure) when they change.
func (r *ConfigReconciler) writeMCA(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, mca *addonv1alpha1.ManagedClusterAddOn, t *target, admitted bool, now time.Time) error {
	refs, conds := configure(mca, t, admitted, now)
	var supported []addonv1alpha1.ConfigGroupResource
	for _, sc := range cma.Spec.SupportedConfigs {
		supported = append(supported, sc.ConfigGroupResource)
	}
	if reflect.DeepEqual(refs, mca.Status.ConfigReferences) && reflect.DeepEqual(conds, mca.Status.Conditions) &&
		(len(supported) == 0 && len(mca.Status.SupportedConfigs) == 0 || reflect.DeepEqual(supported, mca.Status.SupportedConfigs)) {
		return nil
	}
	status := map[string]any{"conditions": conds, "configReferences": refs}
	if supported != nil {
		status["supportedConfigs"] = supported
	}
	v, err := jsonMap(status)
	if err != nil {
		return err
	}
	if err := apply.Guarded(ctx, r.Client, mca, apply.FieldManagerPrefix+ConfigControllerName, true, map[string]any{"status": v}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("ManagedClusterAddOn %s/%s: writing configurations: %w", mca.Namespace, mca.Name, err))
	}
	return nil
}

// writeCMA writes the ClusterManagementAddOn's defaultconfigReferences and
// installProgressions.
func (r *ConfigReconciler) writeCMA(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, rd *configReader, placements []*decisions.Placement,
	assigned map[string]int, results []rollout.Result, mcas map[string]*addonv1alpha1.ManagedClusterAddOn, targets map[string]*target) error {
	var defs []addonv1alpha1.DefaultConfigReference
	if resolved, err := rd.resolve(ctx, defaults(cma)); err == nil {
		for _, rc := range resolved {
			d := rc.ConfigSpecHash
			defs = append(defs, addonv1alpha1.DefaultConfigReference{ConfigGroupResource: rc.ConfigGroupResource, DesiredConfig: &d})
		}
	}
	var progs []addonv1alpha1.InstallProgression
	for i, p := range placements {
		ps := &cma.Spec.InstallStrategy.Placements[i]
		prev := previousProgression(cma, ps.PlacementRef)
		prog := addonv1alpha1.InstallProgression{PlacementRef: ps.PlacementRef}
		resolved, rerr := rd.resolve(ctx, placementConfigs(cma, ps))
		// As OCM counts: every cluster the placement rolls out to (an add-on not created yet
		// included), and "n/total upgrading" with n the clusters updating or updated.
		total, done, progressing, failed, timedOut := 0, 0, 0, 0, len(results[i].TimedOut)
		upgrade := false
		for _, c := range p.Clusters() {
			if assigned[c] != i {
				continue
			}
			total++
			t := targets[c]
			if t == nil {
				continue
			}
			mca := mcas[c]
			for _, ref := range mca.Status.ConfigReferences {
				if ref.LastAppliedConfig != nil && (ref.DesiredConfig == nil || *ref.LastAppliedConfig != *ref.DesiredConfig) {
					upgrade = true
				}
			}
			if !sameDesired(mca.Status.ConfigReferences, t.want) && len(mca.Status.ConfigReferences) > 0 {
				upgrade = true
			}
			switch st := clusterState(mca, t.want); st.Status {
			case rollout.Succeeded:
				done++
			case rollout.Progressing:
				progressing++
			case rollout.Failed:
				failed++
			}
		}
		complete := total > 0 && done == total
		for _, rc := range resolved {
			d := rc.ConfigSpecHash
			ref := addonv1alpha1.InstallConfigReference{ConfigGroupResource: rc.ConfigGroupResource, DesiredConfig: &d}
			if old := findInstallRef(prev, rc.ConfigGroupResource); old != nil {
				ref.LastAppliedConfig, ref.LastKnownGoodConfig = old.LastAppliedConfig, old.LastKnownGoodConfig
			}
			if complete {
				ref.LastAppliedConfig, ref.LastKnownGoodConfig = &d, &d
			}
			prog.ConfigReferences = append(prog.ConfigReferences, ref)
		}
		var conds []metav1.Condition
		if prev != nil {
			conds = append(conds, prev.Conditions...)
		}
		if pc := meta.FindStatusCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionProgressing); pc != nil &&
			(pc.Reason == addonv1alpha1.ProgressingReasonUpgrading || pc.Reason == addonv1alpha1.ProgressingReasonUpgradeSucceed) {
			upgrade = true
		}
		verb, reasonDone, reasonRun := "installing", addonv1alpha1.ProgressingReasonInstallSucceed, addonv1alpha1.ProgressingReasonInstalling
		if upgrade {
			verb, reasonDone, reasonRun = "upgrading", addonv1alpha1.ProgressingReasonUpgradeSucceed, addonv1alpha1.ProgressingReasonUpgrading
		}
		cond := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing}
		switch {
		case rerr != nil:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, addonv1alpha1.ProgressingReasonConfigurationUnsupported, rerr.Error()
		case complete:
			cond.Status, cond.Reason = metav1.ConditionFalse, reasonDone
			cond.Message = fmt.Sprintf("%d/%d completed with no errors, %d failed %d timeout.", done, total, failed, timedOut)
		default:
			cond.Status, cond.Reason = metav1.ConditionTrue, reasonRun
			cond.Message = fmt.Sprintf("%d/%d %s..., %d failed %d timeout.", progressing+done, total, verb, failed, timedOut)
			if results[i].Phase == rollout.PhaseStopped {
				cond.Message += " Rollout stopped: " + results[i].Message
				if prev == nil || !stopped(prev.Conditions) {
					r.Recorder.Eventf(cma, corev1.EventTypeWarning, EventRolloutStopped, "placement %s/%s: %s", ps.Namespace, ps.Name, results[i].Message)
				}
			}
		}
		meta.SetStatusCondition(&conds, cond)
		prog.Conditions = conds
		progs = append(progs, prog)
	}
	if reflect.DeepEqual(defs, cma.Status.DefaultConfigReferences) && reflect.DeepEqual(progs, cma.Status.InstallProgressions) {
		return nil
	}
	v, err := jsonMap(map[string]any{"defaultconfigReferences": defs, "installProgressions": progs})
	if err != nil {
		return err
	}
	m := v.(map[string]any)
	if defs == nil {
		m["defaultconfigReferences"] = []any{}
	}
	if progs == nil {
		m["installProgressions"] = []any{}
	}
	if err := apply.Guarded(ctx, r.Client, cma, apply.FieldManagerPrefix+ConfigControllerName, true, map[string]any{"status": m}); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("ClusterManagementAddOn %s: writing status: %w", cma.Name, err))
	}
	return nil
}

func stopped(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
	return c != nil && c.Status == metav1.ConditionTrue && containsStopped(c.Message)
}

func containsStopped(s string) bool { return strings.Contains(s, "Rollout stopped: ") }

func previousProgression(cma *addonv1alpha1.ClusterManagementAddOn, ref addonv1alpha1.PlacementRef) *addonv1alpha1.InstallProgression {
	for i := range cma.Status.InstallProgressions {
		if cma.Status.InstallProgressions[i].PlacementRef == ref {
			return &cma.Status.InstallProgressions[i]
		}
	}
	return nil
}

func findInstallRef(p *addonv1alpha1.InstallProgression, gr addonv1alpha1.ConfigGroupResource) *addonv1alpha1.InstallConfigReference {
	if p == nil {
		return nil
	}
	for i := range p.ConfigReferences {
		if p.ConfigReferences[i].ConfigGroupResource == gr {
			return &p.ConfigReferences[i]
		}
	}
	return nil
}

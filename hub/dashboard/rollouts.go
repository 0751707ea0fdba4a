package dashboard

// The `rollouts` view model: a ManifestWorkReplicaSet's rollouts as `flotilla rollout status`
// shows them (hub/mwrs.Inspect), and an add-on's from its ClusterManagementAddOn and
// ManagedClusterAddOns (as hub/addon's configuration controller decides each cluster's state).

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/rollout"
	"github.com/flotilla-dev/flotilla/hub/addon"
	"github.com/flotilla-dev/flotilla/hub/addon/render"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/decisions"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

// Rollout kinds.
const (
	RolloutKindMWRS  = "ManifestWorkReplicaSet"
	RolloutKindAddOn = "ClusterManagementAddOn"
)

// RolloutPhaseRolledBack is the phase of a replica set whose template was rolled back (it is
// not rolled out again); RolloutPhaseUnknown is the phase of a rollout that could not be read.
const (
	RolloutPhaseRolledBack = "RolledBack"
	RolloutPhaseUnknown    = "Unknown"
)

// Rollout is one rollout of the `rollouts` kind (design-26).
type Rollout struct {
	Key        string             `json:"key"`
	Kind       string             `json:"kind"`
	Namespace  string             `json:"namespace"`
	Name       string             `json:"name"`
	Phase      string             `json:"phase"`
	Message    string             `json:"message"`
	Conditions []RolloutCondition `json:"conditions"`
	RolledBack bool               `json:"rolledBack"`
	Summary    RolloutSummary     `json:"summary"`
	Placements []RolloutPlacement `json:"placements"`
}

// RolloutCondition is a condition as the page shows it (design-26 Cond).
type RolloutCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Time    string `json:"time"`
}

// RolloutSummary counts the rollout's clusters (works for a replica set, add-ons for an add-on).
type RolloutSummary struct {
	Total       int `json:"total"`
	Applied     int `json:"applied"`
	Available   int `json:"available"`
	Degraded    int `json:"degraded"`
	Progressing int `json:"progressing"`
}

// RolloutPlacement is the rollout over one placement.
type RolloutPlacement struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	Phase    string `json:"phase"`
	Message  string `json:"message"`
	// Error says why the placement's rollout is not evaluated (no Placement, a bad strategy).
	Error  string         `json:"error"`
	Groups []RolloutGroup `json:"groups"`
}

// RolloutGroup is one decision group; State summarizes its clusters (rolloutGroupState).
type RolloutGroup struct {
	Index    int32            `json:"index"`
	Name     string           `json:"name"`
	State    string           `json:"state"`
	Clusters []RolloutCluster `json:"clusters"`
}

// RolloutCluster is one cluster's state (a core/rollout Status name), since when, why, and its
// ManifestWork ("namespace/name", "" if none).
type RolloutCluster struct {
	Cluster string `json:"cluster"`
	State   string `json:"state"`
	Since   string `json:"since"`
	Why     string `json:"why"`
	Work    string `json:"work"`
}

// MWRSRollout is rs's rollout at now as `flotilla rollout status` computes it (hub/mwrs.Inspect,
// overrides rendered with transform plugins loaded locally). Nothing fails the view: what
// cannot be read is the rollout's message, a placement's error or a cluster's why.
func MWRSRollout(ctx context.Context, r client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, now time.Time) Rollout {
	s := rs.Status.Summary
	out := Rollout{
		Key: rs.Namespace + "/" + rs.Name, Kind: RolloutKindMWRS, Namespace: rs.Namespace, Name: rs.Name,
		Conditions: rolloutConditions(rs.Status.Conditions), RolledBack: mwrs.RolledBack(rs),
		Summary:    RolloutSummary{Total: s.Total, Applied: s.Applied, Available: s.Available, Degraded: s.Degraded, Progressing: s.Progressing},
		Placements: []RolloutPlacement{},
	}
	tr, done, err := admin.LocalTransformer(ctx, r, rs)
	if err != nil {
		// No plugin could be loaded (no overrides listed, no engine): the rules that need one
		// fail with why, and the clusters they select say so; the others render.
		tr, done = rolloutFailingTransformer{err: err}, func() {}
	}
	defer done()
	prs, err := mwrs.Inspect(ctx, r, rs, now, &scheduler.CELMatcher{}, tr)
	if err != nil {
		out.Phase, out.Message = RolloutPhaseUnknown, fmt.Sprintf("ManifestWorkReplicaSet %s/%s: %v", rs.Namespace, rs.Name, err)
		return out
	}
	works, werr := rolloutWorksOf(ctx, r, rs)
	var phases []rollout.Phase
	for i, pr := range prs {
		pl := RolloutPlacement{Name: pr.Name, Strategy: rolloutStrategyName(rs.Spec.PlacementRefs[i].RolloutStrategy.Type), Groups: []RolloutGroup{}}
		switch {
		case !pr.Found:
			pl.Error = fmt.Sprintf("Placement %s/%s not found", rs.Namespace, pr.Name)
		case pr.Err != nil:
			pl.Error = pr.Err.Error()
		default:
			pl.Phase, pl.Message = string(pr.Result.Phase), pr.Result.Message
			phases = append(phases, pr.Result.Phase)
			if out.RolledBack {
				pl.Phase = RolloutPhaseRolledBack
				pl.Message = "this template is not rolled out again; change it to start the next rollout"
			}
		}
		var cur *RolloutGroup
		for _, c := range pr.Clusters {
			if cur == nil || cur.Index != c.Group.Index {
				pl.Groups = append(pl.Groups, RolloutGroup{Index: c.Group.Index, Name: c.Group.Name, Clusters: []RolloutCluster{}})
				cur = &pl.Groups[len(pl.Groups)-1]
			}
			rc := RolloutCluster{Cluster: c.Cluster, State: c.State.String(), Why: c.Why}
			if c.State != rollout.ToApply {
				rc.Since = rolloutTime(c.Since)
			}
			if works[c.Cluster] {
				rc.Work = c.Cluster + "/" + rs.Name
			}
			cur.Clusters = append(cur.Clusters, rc)
		}
		for j := range pl.Groups {
			pl.Groups[j].State = rolloutGroupState(pl.Groups[j].Clusters)
		}
		out.Placements = append(out.Placements, pl)
	}
	out.Phase, out.Message = rolloutPhase(phases, out.Placements)
	if out.RolledBack {
		out.Phase = RolloutPhaseRolledBack
		if c := meta.FindStatusCondition(rs.Status.Conditions, mwrs.ConditionRolledBack); c != nil {
			out.Message = c.Message
		}
	}
	if werr != nil {
		out.Message = rolloutJoin(out.Message, werr.Error())
	}
	return out
}

// rolloutWorksOf are the clusters that have a ManifestWork of rs (the replica set label, OCM's
// "<namespace>.<name>").
func rolloutWorksOf(ctx context.Context, r client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet) (map[string]bool, error) {
	list := &workv1.ManifestWorkList{}
	if err := r.List(ctx, list, client.MatchingLabels{workv1alpha1.ManifestWorkReplicaSetControllerNameLabelKey: rs.Namespace + "." + rs.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the ManifestWorks of ManifestWorkReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	out := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Name == rs.Name {
			out[list.Items[i].Namespace] = true
		}
	}
	return out, nil
}

// rolloutFailingTransformer fails every transform with why the plugins were not loaded.
type rolloutFailingTransformer struct{ err error }

func (t rolloutFailingTransformer) Transform(context.Context, override.TransformRequest) (json.RawMessage, error) {
	return nil, fmt.Errorf("not rendered locally: %w", t.err)
}

// AddonRollout is the rollout of cma's configurations over its install strategy's placements:
// each placement's decision groups, each cluster's state as the add-on manager's
// configuration controller decides it (hub/addon.RolloutState against the configurations the
// controller reports in status.installProgressions), evaluated with the placement's rollout
// strategy at now.
func AddonRollout(ctx context.Context, r client.Reader, cma *addonv1alpha1.ClusterManagementAddOn, now time.Time) Rollout {
	return AddonRollouts(ctx, r, []*addonv1alpha1.ClusterManagementAddOn{cma}, now)[0]
}

// AddonRollouts are the rollouts of cmas (AddonRollout), in order, from one list of the
// ManagedClusterAddOns and one of the add-ons' deploy ManifestWorks (a pass over every add-on
// reads the fleet once, not once per add-on).
func AddonRollouts(ctx context.Context, r client.Reader, cmas []*addonv1alpha1.ClusterManagementAddOn, now time.Time) []Rollout {
	names := make([]string, 0, len(cmas))
	for _, cma := range cmas {
		names = append(names, cma.Name)
	}
	idx, err := rolloutAddonIndex(ctx, r, names)
	works := rolloutAddonWorks(ctx, r, names)
	out := make([]Rollout, 0, len(cmas))
	for _, cma := range cmas {
		out = append(out, addonRolloutOf(ctx, r, cma, idx[cma.Name], err, works[cma.Name], now))
	}
	return out
}

// rolloutAddonIndex are the ManagedClusterAddOns of the add-ons names, by add-on then cluster,
// from one list. The objects are the reader's own (not copied): read only.
func rolloutAddonIndex(ctx context.Context, r client.Reader, names []string) (map[string]map[string]*addonv1alpha1.ManagedClusterAddOn, error) {
	want := make(map[string]map[string]*addonv1alpha1.ManagedClusterAddOn, len(names))
	for _, n := range names {
		want[n] = map[string]*addonv1alpha1.ManagedClusterAddOn{}
	}
	list := &addonv1alpha1.ManagedClusterAddOnList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return want, fmt.Errorf("listing ManagedClusterAddOns: %w", err)
	}
	for i := range list.Items {
		if byCluster, ok := want[list.Items[i].Name]; ok {
			byCluster[list.Items[i].Namespace] = &list.Items[i]
		}
	}
	return want, nil
}

// rolloutAddonWorks are the clusters that have the deploy ManifestWork (work 0) of each add-on
// of names, from one list of the works labelled with those add-ons, read only where works are
// watched: without (a dashboard that may not list works, or a reader that is not a cache) or
// when the list fails, no cluster links its work, rather than one GET per cluster to the API
// server.
func rolloutAddonWorks(ctx context.Context, r client.Reader, names []string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	if len(names) == 0 {
		return out
	}
	if f, ok := r.(explainFallback); ok {
		r = f.cached
	}
	var values []string
	for _, n := range names {
		if len(validation.IsValidLabelValue(n)) == 0 {
			values = append(values, n) // the others cannot label a work
		}
	}
	if len(values) == 0 {
		return out
	}
	sel, err := labels.NewRequirement(addonv1alpha1.AddonLabelKey, selection.In, values)
	if err != nil {
		return out
	}
	list := &workv1.ManifestWorkList{}
	if err := r.List(ctx, list, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*sel)}, client.UnsafeDisableDeepCopy); err != nil {
		// Not watched, forbidden, or failing: the dialog could not open the work either.
		return out
	}
	for i := range list.Items {
		w := &list.Items[i]
		name := w.Labels[addonv1alpha1.AddonLabelKey]
		if w.Name != render.DeployWorkName(name, 0) {
			continue
		}
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		out[name][w.Namespace] = true
	}
	return out
}

// addonRolloutOf is AddonRollout from the add-on's ManagedClusterAddOns by cluster (mcas; listErr
// if they could not be listed) and the clusters that have its deploy work.
func addonRolloutOf(ctx context.Context, r client.Reader, cma *addonv1alpha1.ClusterManagementAddOn, mcas map[string]*addonv1alpha1.ManagedClusterAddOn, listErr error, works map[string]bool, now time.Time) Rollout {
	out := Rollout{
		Key: AddonRolloutKey(cma.Name), Kind: RolloutKindAddOn, Name: cma.Name,
		Conditions: []RolloutCondition{}, Placements: []RolloutPlacement{},
	}
	if listErr != nil {
		out.Phase, out.Message = RolloutPhaseUnknown, fmt.Sprintf("ClusterManagementAddOn %s: %v", cma.Name, listErr)
		return out
	}
	for _, m := range mcas {
		out.Summary.Total++
		cond := func(t string) bool {
			c := meta.FindStatusCondition(m.Status.Conditions, t)
			return c != nil && c.Status == metav1.ConditionTrue
		}
		if len(m.Status.ConfigReferences) > 0 && rolloutConfigsApplied(m.Status.ConfigReferences) {
			out.Summary.Applied++
		}
		if cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable) {
			out.Summary.Available++
		}
		if cond(addonv1alpha1.ManagedClusterAddOnConditionDegraded) {
			out.Summary.Degraded++
		}
		if cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing) {
			out.Summary.Progressing++
		}
	}
	if cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		out.Phase = string(rollout.PhaseComplete)
		out.Message = fmt.Sprintf("install strategy %s: no placement rolls it out", rolloutStrategyOr(cma.Spec.InstallStrategy.Type, addonv1alpha1.AddonInstallStrategyManual))
		return out
	}

	// Read every placement first: a cluster several placements select is rolled out by the
	// last one, as the controller does.
	strategies := cma.Spec.InstallStrategy.Placements
	placements := make([]*decisions.Placement, len(strategies))
	errs := make([]error, len(strategies))
	assigned := map[string]int{}
	for i, ps := range strategies {
		placements[i], errs[i] = decisions.Read(ctx, r, ps.Namespace, ps.Name)
		if errs[i] == nil {
			for _, c := range placements[i].Clusters() {
				assigned[c] = i
			}
		}
	}
	var phases []rollout.Phase
	for i, ps := range strategies {
		pl := RolloutPlacement{Name: ps.Namespace + "/" + ps.Name, Strategy: rolloutStrategyName(ps.RolloutStrategy.Type), Groups: []RolloutGroup{}}
		prog := rolloutProgression(cma, ps.PlacementRef)
		if prog != nil {
			for _, c := range prog.Conditions {
				c.Type = pl.Name + ": " + c.Type
				out.Conditions = append(out.Conditions, rolloutCondition(c))
			}
		}
		p := placements[i]
		switch {
		case errs[i] != nil:
			pl.Error = errs[i].Error()
			out.Placements = append(out.Placements, pl)
			continue
		case !p.Found:
			pl.Error = fmt.Sprintf("Placement %s not found", pl.Name)
			out.Placements = append(out.Placements, pl)
			continue
		}
		var desired []addonv1alpha1.InstallConfigReference
		if prog != nil {
			desired = prog.ConfigReferences
		}
		states := map[string]rollout.ClusterState{}
		whys := map[string]string{}
		for _, c := range p.Clusters() {
			states[c], whys[c] = rolloutAddonState(mcas[c], assigned[c] == i, desired, pl.Name)
		}
		res, err := rollout.Evaluate(rollout.Input{Strategy: ps.RolloutStrategy, Groups: p.Groups, States: states, Now: now})
		if err != nil {
			pl.Error = err.Error()
		} else {
			pl.Phase, pl.Message = string(res.Phase), res.Message
			if prog == nil {
				// Without the controller's resolved configurations every cluster reads ToApply.
				pl.Message = rolloutJoin(pl.Message, "the add-on manager reports no install progression for this placement yet")
			}
			phases = append(phases, res.Phase)
			for _, c := range res.TimedOut {
				states[c] = rollout.ClusterState{Status: rollout.TimeOut, LastTransitionTime: states[c].LastTransitionTime}
				whys[c] = "no success within progressDeadline"
			}
		}
		for _, g := range p.Groups {
			rg := RolloutGroup{Index: g.Index, Name: g.Name, Clusters: []RolloutCluster{}}
			for _, c := range g.Clusters {
				st := states[c]
				rc := RolloutCluster{Cluster: c, State: st.Status.String(), Why: whys[c]}
				if st.Status != rollout.ToApply {
					rc.Since = rolloutTime(st.LastTransitionTime)
				}
				if works[c] {
					rc.Work = c + "/" + render.DeployWorkName(cma.Name, 0)
				}
				rg.Clusters = append(rg.Clusters, rc)
			}
			rg.State = rolloutGroupState(rg.Clusters)
			pl.Groups = append(pl.Groups, rg)
		}
		out.Placements = append(out.Placements, pl)
	}
	out.Phase, out.Message = rolloutPhase(phases, out.Placements)
	return out
}

// rolloutAddonState is a cluster's state in a placement's rollout of an add-on, and why.
// A cluster another placement rolls out holds no slot here (Skip), as the controller has it;
// one without ManagedClusterAddOn yet has nothing installed: ToApply (not Skip, which would
// count toward a Complete rollout before anything is installed). An add-on with its own configurations (spec.configs) has its own
// desired set, which only the controller resolves: it is judged against what it was last
// given (it cannot show ToApply for a change it has not been given yet).
func rolloutAddonState(mca *addonv1alpha1.ManagedClusterAddOn, mine bool, desired []addonv1alpha1.InstallConfigReference, placement string) (rollout.ClusterState, string) {
	switch {
	case !mine:
		return rollout.ClusterState{Status: rollout.Skip}, "rolled out by another placement"
	case mca == nil:
		return rollout.ClusterState{Status: rollout.ToApply}, "ManagedClusterAddOn not created yet"
	}
	own := len(mca.Spec.Configs) > 0
	if own {
		desired = desired[:0:0]
		for _, ref := range mca.Status.ConfigReferences {
			desired = append(desired, addonv1alpha1.InstallConfigReference{ConfigGroupResource: ref.ConfigGroupResource, DesiredConfig: ref.DesiredConfig})
		}
	}
	st := addon.RolloutState(mca, desired)
	cond := func(t string) *metav1.Condition { return meta.FindStatusCondition(mca.Status.Conditions, t) }
	condWhy := func(prefix string, c *metav1.Condition) string {
		if c == nil {
			return prefix
		}
		return fmt.Sprintf("%s%s: %s", prefix, c.Reason, c.Message)
	}
	var why string
	switch st.Status {
	case rollout.ToApply:
		why = fmt.Sprintf("the configurations of placement %s are not rolled out to it yet", placement)
		if c := cond(addonv1alpha1.ManagedClusterAddOnConditionConfigured); c != nil && c.Status == metav1.ConditionFalse {
			why = condWhy("not Configured: ", c)
		}
	case rollout.Progressing:
		why = condWhy("Progressing: ", cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing))
	case rollout.Failed:
		why = condWhy("Failed: ", cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing))
	case rollout.Succeeded:
		why = "configurations applied"
		if c := cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable); c != nil {
			why += fmt.Sprintf("; Available=%s", c.Status)
			if c.Status != metav1.ConditionTrue {
				why += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
			}
		}
	}
	if own {
		why += " (its own spec.configs)"
	}
	return st, why
}

// rolloutProgression is cma's reported progression of placement ref, nil if none.
func rolloutProgression(cma *addonv1alpha1.ClusterManagementAddOn, ref addonv1alpha1.PlacementRef) *addonv1alpha1.InstallProgression {
	for i := range cma.Status.InstallProgressions {
		if cma.Status.InstallProgressions[i].PlacementRef == ref {
			return &cma.Status.InstallProgressions[i]
		}
	}
	return nil
}

func rolloutConfigsApplied(refs []addonv1alpha1.ConfigReference) bool {
	for _, r := range refs {
		if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.DesiredConfig != *r.LastAppliedConfig {
			return false
		}
	}
	return true
}

// rolloutGroupState: Succeeded when every cluster is Succeeded or Skip, Failed if any is Failed
// or TimeOut, Progressing if any is Progressing, else ToApply (design-26).
func rolloutGroupState(cs []RolloutCluster) string {
	done, progressing := true, false
	for _, c := range cs {
		switch c.State {
		case rollout.Failed.String(), rollout.TimeOut.String():
			return rollout.Failed.String()
		case rollout.Progressing.String():
			progressing = true
			done = false
		case rollout.Succeeded.String(), rollout.Skip.String():
		default:
			done = false
		}
	}
	switch {
	case progressing:
		return rollout.Progressing.String()
	case done:
		return rollout.Succeeded.String()
	}
	return rollout.ToApply.String()
}

// rolloutPhase is the phase of a rollout over placements: Stopped if any is, else
// Progressing if any is, else Complete; Unknown when no placement could be evaluated. The
// message is the first placement's that is not Complete (its error, or its verdict).
func rolloutPhase(phases []rollout.Phase, pls []RolloutPlacement) (string, string) {
	msg := ""
	for _, pl := range pls {
		if pl.Error != "" || pl.Phase != string(rollout.PhaseComplete) {
			m := pl.Message
			if pl.Error != "" {
				m = pl.Error
			}
			msg = pl.Name + ": " + m
			break
		}
	}
	if len(phases) == 0 {
		if len(pls) == 0 {
			return RolloutPhaseUnknown, "no placement"
		}
		return RolloutPhaseUnknown, msg
	}
	has := func(p rollout.Phase) bool {
		for _, x := range phases {
			if x == p {
				return true
			}
		}
		return false
	}
	switch {
	case has(rollout.PhaseStopped):
		return string(rollout.PhaseStopped), msg
	case has(rollout.PhaseProgressing) || len(phases) < len(pls):
		return string(rollout.PhaseProgressing), msg
	}
	return string(rollout.PhaseComplete), msg
}

func rolloutStrategyName[T ~string](t T) string { return rolloutStrategyOr(t, "All") }

func rolloutStrategyOr[T ~string](t T, def T) string {
	if t == "" {
		return string(def)
	}
	return string(t)
}

func rolloutConditions(cs []metav1.Condition) []RolloutCondition {
	out := make([]RolloutCondition, 0, len(cs))
	for _, c := range cs {
		out = append(out, rolloutCondition(c))
	}
	return out
}

func rolloutCondition(c metav1.Condition) RolloutCondition {
	return RolloutCondition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Time: rolloutTime(c.LastTransitionTime.Time)}
}

// rolloutTime is t in RFC3339, "" when unknown.
func rolloutTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func rolloutJoin(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

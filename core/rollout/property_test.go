package rollout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// scenario is one randomly generated rollout.
type scenario struct {
	strategy  clusterv1alpha1.RolloutStrategy
	rc        clusterv1alpha1.RolloutConfig
	groups    []Group
	skipped   []string
	failProb  float64 // an updated cluster ends Failed
	stuckProb float64 // an updated cluster stays Progressing forever
	churn     bool    // decision groups change during the rollout
}

func (sc scenario) String() string {
	return fmt.Sprintf("strategy=%+v groups=%v skipped=%v fail=%.2f stuck=%.2f churn=%v",
		describeStrategy(sc.strategy), sc.groups, sc.skipped, sc.failProb, sc.stuckProb, sc.churn)
}

func describeStrategy(s clusterv1alpha1.RolloutStrategy) string {
	switch s.Type {
	case clusterv1alpha1.Progressive:
		return fmt.Sprintf("Progressive%+v", *s.Progressive)
	case clusterv1alpha1.ProgressivePerGroup:
		return fmt.Sprintf("ProgressivePerGroup%+v", *s.ProgressivePerGroup)
	default:
		return fmt.Sprintf("All%+v", *s.All)
	}
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func randomScenario(rng *rand.Rand) scenario {
	var sc scenario
	nGroups := 1 + rng.IntN(5)
	index := int32(rng.IntN(2)) // sometimes start at 1
	total := 0
	for g := 0; g < nGroups; g++ {
		name := ""
		if g == 0 && rng.IntN(2) == 0 || g == 1 && rng.IntN(5) == 0 {
			name = "canary" // group 1 named canary too: a split named group
		}
		var clusters []string
		for i, n := 0, rng.IntN(6); i < n; i++ {
			// Letters first so that name order differs from group order.
			clusters = append(clusters, fmt.Sprintf("%c-%d-%d", 'a'+rng.IntN(26), g, i))
		}
		total += len(clusters)
		sc.groups = append(sc.groups, Group{Index: index, Name: name, Clusters: clusters})
		index += int32(1 + rng.IntN(2)) // sometimes leave a gap
	}
	if total == 0 {
		sc.groups[0].Clusters = []string{"only"}
	}
	for _, g := range sc.groups {
		for _, c := range g.Clusters {
			if rng.IntN(20) == 0 {
				sc.skipped = append(sc.skipped, c)
			}
		}
	}

	sc.rc = clusterv1alpha1.RolloutConfig{
		MinSuccessTime:   metav1.Duration{Duration: pick(rng, 0, 30*time.Second, 5*time.Minute)},
		ProgressDeadline: pick(rng, "", "None", "3m", "10m"),
		MaxFailures:      pick(rng, intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(2), intstr.FromString("0%"), intstr.FromString("25%"), intstr.FromString("50%"), intstr.FromString("100%")),
	}
	var mandatory []clusterv1alpha1.MandatoryDecisionGroup
	if rng.IntN(5) < 2 {
		if sc.groups[0].Name == "canary" && rng.IntN(2) == 0 {
			mandatory = append(mandatory, clusterv1alpha1.MandatoryDecisionGroup{GroupName: "canary"})
		} else {
			mandatory = append(mandatory, clusterv1alpha1.MandatoryDecisionGroup{GroupIndex: sc.groups[rng.IntN(len(sc.groups))].Index})
		}
	}
	switch rng.IntN(3) {
	case 0:
		sc.strategy = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All, All: &clusterv1alpha1.RolloutAll{RolloutConfig: sc.rc}}
	case 1:
		sc.strategy = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
			RolloutConfig:           sc.rc,
			MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory},
			MaxConcurrency:          pick(rng, intstr.IntOrString{}, intstr.FromInt32(1), intstr.FromInt32(2), intstr.FromInt32(3), intstr.FromString("25%"), intstr.FromString("50%"), intstr.FromString("100%")),
		}}
	default:
		sc.strategy = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
			RolloutConfig:           sc.rc,
			MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory},
		}}
	}
	switch rng.IntN(3) {
	case 0: // nothing fails
	case 1:
		sc.failProb = 0.1 + 0.2*rng.Float64()
	default:
		sc.failProb = 0.2 * rng.Float64()
		sc.stuckProb = 0.15
	}
	sc.churn = rng.IntN(4) == 0
	return sc
}

// churnGroups changes the decision groups as a Placement might mid-rollout: a
// new cluster joins a group, a cluster leaves, or every group is re-numbered
// (not when a mandatory group is referenced by index, which would then name
// nothing).
func churnGroups(rng *rand.Rand, sc *scenario, serial int) string {
	groups := make([]Group, len(sc.groups))
	for i, g := range sc.groups {
		groups[i] = Group{Index: g.Index, Name: g.Name, Clusters: slices.Clone(g.Clusters)}
	}
	sc.groups = groups
	g := &groups[rng.IntN(len(groups))]
	switch rng.IntN(3) {
	case 0:
		c := fmt.Sprintf("%c-new-%d", 'a'+rng.IntN(26), serial)
		g.Clusters = append(g.Clusters, c)
		return "joined " + c
	case 1:
		if len(g.Clusters) > 0 {
			i := rng.IntN(len(g.Clusters))
			c := g.Clusters[i]
			g.Clusters = slices.Delete(g.Clusters, i, i+1)
			return "left " + c
		}
	}
	for _, m := range mandatoryOf(sc.strategy) {
		if m.GroupName == "" {
			return "nothing"
		}
	}
	for i := range groups {
		groups[i].Index += 10
	}
	return "re-numbered"
}

func mandatoryOf(s clusterv1alpha1.RolloutStrategy) []clusterv1alpha1.MandatoryDecisionGroup {
	switch s.Type {
	case clusterv1alpha1.Progressive:
		return s.Progressive.MandatoryDecisionGroups.MandatoryDecisionGroups
	case clusterv1alpha1.ProgressivePerGroup:
		return s.ProgressivePerGroup.MandatoryDecisionGroups.MandatoryDecisionGroups
	}
	return nil
}

// oracle re-derives, independently and naively, what a scenario's strategy
// means for a set of states at a time.
type oracle struct {
	sc        scenario
	order     [][]string // groups' clusters in rollout order
	mandatory []bool     // per entry of order
	groupOf   map[string]int
	all       []string
	deadline  time.Duration
	finite    bool
}

func newOracle(sc scenario) *oracle {
	o := &oracle{sc: sc, groupOf: map[string]int{}}
	gs := slices.Clone(sc.groups)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Index < gs[j].Index })
	mand := mandatoryOf(sc.strategy)
	isMandatory := func(g Group) bool {
		for _, m := range mand {
			if m.GroupName != "" && m.GroupName == g.Name || m.GroupName == "" && m.GroupIndex == g.Index {
				return true
			}
		}
		return false
	}
	for _, first := range []bool{true, false} {
		for _, g := range gs {
			if isMandatory(g) == first {
				cs := slices.Clone(g.Clusters)
				sort.Strings(cs)
				for _, c := range cs {
					o.groupOf[c] = len(o.order)
				}
				o.order = append(o.order, cs)
				o.mandatory = append(o.mandatory, first)
				o.all = append(o.all, cs...)
			}
		}
	}
	switch d := sc.rc.ProgressDeadline; d {
	case "", "None":
	default:
		o.deadline, _ = time.ParseDuration(d)
		o.finite = true
	}
	return o
}

func percentOf(v intstr.IntOrString, total int) int {
	if v.Type == intstr.String {
		var p int
		fmt.Sscanf(v.StrVal, "%d%%", &p)
		return (p*total + 99) / 100 // rounded up, as OCM
	}
	return v.IntValue()
}

func (o *oracle) timedOut(s ClusterState, now time.Time) bool {
	return s.Status == Progressing && o.finite && now.Sub(s.LastTransitionTime) >= o.deadline
}
func (o *oracle) failed(s ClusterState, now time.Time) bool {
	return s.Status == Failed || s.Status == TimeOut || o.timedOut(s, now)
}
func (o *oracle) soaked(s ClusterState, now time.Time) bool {
	return s.Status == Succeeded && now.Sub(s.LastTransitionTime) >= o.sc.rc.MinSuccessTime.Duration
}
func (o *oracle) inFlight(s ClusterState, now time.Time) bool {
	return s.Status == Progressing && !o.timedOut(s, now) || s.Status == Succeeded && !o.soaked(s, now)
}
func (o *oracle) groupDone(g int, st map[string]ClusterState, now time.Time) bool {
	for _, c := range o.order[g] {
		if s := st[c]; s.Status == ToApply || o.inFlight(s, now) {
			return false
		}
	}
	return true
}

func (o *oracle) stopped(st map[string]ClusterState, now time.Time) bool {
	switch o.sc.strategy.Type {
	case clusterv1alpha1.ProgressivePerGroup:
		for g, cs := range o.order {
			n := 0
			for _, c := range cs {
				if o.failed(st[c], now) {
					n++
				}
			}
			limit := percentOf(o.sc.rc.MaxFailures, len(cs))
			if o.mandatory[g] {
				limit = 0
			}
			if n > limit {
				return true
			}
		}
		return false
	default:
		n := 0
		for _, c := range o.all {
			if o.failed(st[c], now) {
				n++
				if o.mandatory[o.groupOf[c]] {
					return true
				}
			}
		}
		return n > percentOf(o.sc.rc.MaxFailures, len(o.all))
	}
}

func (o *oracle) maxConcurrency() int {
	mc := o.sc.strategy.Progressive.MaxConcurrency
	n := percentOf(mc, len(o.all))
	if mc.Type == intstr.Int && mc.IntVal == 0 {
		n = 0
		for g, cs := range o.order {
			if !o.mandatory[g] && len(cs) > n {
				n = len(cs)
			}
		}
	}
	return max(n, 1)
}

func TestRandomizedRollouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(20250601, 327))
	const runs = 600
	completed := map[clusterv1alpha1.RolloutType]int{}
	stopped, changes := 0, 0
	for i := 0; i < runs; i++ {
		sc := randomScenario(rng)
		phase, churns := simulate(t, sc, rng)
		changes += churns
		if t.Failed() {
			t.Fatalf("run %d: %s", i, sc)
		}
		if phase == PhaseComplete {
			completed[sc.strategy.Type]++
		}
		if phase == PhaseStopped {
			stopped++
		}
	}
	t.Logf("%d runs: completed %v, stopped %d, decision group changes %d", runs, completed, stopped, changes)
	// The generator must exercise the interesting outcomes.
	for _, typ := range []clusterv1alpha1.RolloutType{clusterv1alpha1.All, clusterv1alpha1.Progressive, clusterv1alpha1.ProgressivePerGroup} {
		if completed[typ] < 20 {
			t.Errorf("only %d %s rollouts completed", completed[typ], typ)
		}
	}
	if stopped < 50 {
		t.Errorf("only %d rollouts stopped", stopped)
	}
	if changes < 100 {
		t.Errorf("only %d decision group changes", changes)
	}
}

// simulate runs a scenario step by step: the caller applies ToUpdate
// (Progressing now), records TimedOut as TimeOut, and updated clusters later
// succeed, fail or hang. Failures are terminal. It checks the invariants after
// every evaluation and returns the final phase.
func simulate(t *testing.T, sc scenario, rng *rand.Rand) (Phase, int) {
	t.Helper()
	o := newOracle(sc)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st := map[string]ClusterState{}
	for _, c := range sc.skipped {
		st[c] = ClusterState{Status: Skip, LastTransitionTime: now}
	}
	type outcome struct {
		at     time.Time
		status Status
	}
	outcomes := map[string]outcome{}
	updated := map[string]bool{}
	wasStopped := false
	churns := 0
	var history []string
	var res Result

	for step := 0; ; step++ {
		if step > 2000 {
			t.Errorf("no end after %d steps", step)
			return res.Phase, churns
		}
		var err error
		res, err = Evaluate(Input{Strategy: sc.strategy, Groups: sc.groups, States: st, Now: now})
		if err != nil {
			t.Errorf("Evaluate: %v", err)
			return res.Phase, churns
		}
		checkStep(t, o, res, st, now, wasStopped)
		if t.Failed() {
			t.Logf("scenario: %s\nhistory: %v", sc, history)
			t.Logf("step %d at %s: states %v\nresult %+v", step, now.Format(time.TimeOnly), st, res)
			return res.Phase, churns
		}
		if res.Phase == PhaseStopped {
			wasStopped = true
		}

		for _, c := range res.TimedOut {
			st[c] = ClusterState{Status: TimeOut, LastTransitionTime: now}
			delete(outcomes, c)
		}
		for _, c := range res.ToUpdate {
			updated[c] = true
			st[c] = ClusterState{Status: Progressing, LastTransitionTime: now}
			d := time.Duration(1+rng.IntN(12)) * time.Minute
			if sc.failProb == 0 && sc.stuckProb == 0 {
				d = time.Duration(30+rng.IntN(120)) * time.Second // within every deadline: nothing times out
			}
			switch r := rng.Float64(); {
			case r < sc.failProb:
				outcomes[c] = outcome{now.Add(d), Failed}
			case r < sc.failProb+sc.stuckProb:
				// hangs: only a deadline ends it
			default:
				outcomes[c] = outcome{now.Add(d), Succeeded}
			}
		}
		if len(res.ToUpdate) > 0 || len(res.TimedOut) > 0 {
			continue // re-evaluate at the same time with the new states
		}

		// Advance to the next event: an outcome or RecheckAfter.
		var next time.Time
		for _, oc := range outcomes {
			if next.IsZero() || oc.at.Before(next) {
				next = oc.at
			}
		}
		if res.RecheckAfter > 0 {
			if at := now.Add(res.RecheckAfter); next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if sc.churn && churns < 4 && rng.IntN(3) == 0 {
			churns++
			what := churnGroups(rng, &sc, churns)
			o = newOracle(sc)
			if !o.stopped(st, now) {
				wasStopped = false // a larger group may have a larger failure budget
			}
			history = append(history, fmt.Sprintf("at %s groups changed (%s): %v", now.Format(time.TimeOnly), what, sc.groups))
			continue
		}
		if next.IsZero() {
			break
		}
		now = next
		for c, oc := range outcomes {
			if !oc.at.After(now) {
				st[c] = ClusterState{Status: oc.status, LastTransitionTime: oc.at}
				delete(outcomes, c)
			}
		}
	}

	// Liveness.
	if sc.failProb == 0 && sc.stuckProb == 0 {
		if res.Phase != PhaseComplete {
			t.Errorf("nothing failed but the rollout ended %s: %s", res.Phase, res.Message)
		}
		for _, c := range o.all {
			if !updated[c] && !slices.Contains(sc.skipped, c) {
				t.Errorf("cluster %s was never updated", c)
			}
		}
	}
	if res.Phase == PhaseProgressing {
		hung := false
		for _, c := range o.all {
			if st[c].Status == Progressing {
				hung = true
			}
		}
		if !hung && res.Counts.ToApply > 0 {
			t.Errorf("rollout ended Progressing with %d clusters never updated and nothing in flight: %s", res.Counts.ToApply, res.Message)
		}
	}
	return res.Phase, churns
}

func checkStep(t *testing.T, o *oracle, res Result, st map[string]ClusterState, now time.Time, wasStopped bool) {
	t.Helper()
	typ := o.sc.strategy.Type

	// Complete exactly when every cluster succeeded past the soak or is skipped.
	complete := true
	for _, c := range o.all {
		if s := st[c]; !(s.Status == Skip || o.soaked(s, now)) {
			complete = false
		}
	}
	if complete != (res.Phase == PhaseComplete) {
		t.Errorf("Phase %s, but complete=%v", res.Phase, complete)
	}

	// Stopped exactly when maxFailures is breached; no admission after a stop.
	if stop := o.stopped(st, now); stop != (res.Phase == PhaseStopped) || stop != (res.Breach != nil) {
		t.Errorf("Phase %s Breach %v, but breached=%v", res.Phase, res.Breach, stop)
	}
	if (res.Phase == PhaseStopped || wasStopped) && len(res.ToUpdate) > 0 {
		t.Errorf("stopped (now %v, before %v) but ToUpdate = %v", res.Phase == PhaseStopped, wasStopped, res.ToUpdate)
	}

	// ToUpdate: ToApply clusters only, once each, in rollout order.
	for i, c := range res.ToUpdate {
		if st[c].Status != ToApply {
			t.Errorf("ToUpdate has %s in status %s", c, st[c].Status)
		}
		if i > 0 {
			p, q := res.ToUpdate[i-1], c
			if o.groupOf[p] > o.groupOf[q] || o.groupOf[p] == o.groupOf[q] && p >= q {
				t.Errorf("ToUpdate out of order: %v", res.ToUpdate)
			}
		}
	}

	// TimedOut: exactly the Progressing clusters past the deadline.
	var timedOut []string
	for _, c := range o.all {
		if o.timedOut(st[c], now) {
			timedOut = append(timedOut, c)
		}
	}
	sort.Strings(timedOut)
	if !sameList(timedOut, res.TimedOut) {
		t.Errorf("TimedOut = %v, want %v", res.TimedOut, timedOut)
	}

	// Removed: every state of a cluster in no group.
	var removed []string
	for c := range st {
		if _, ok := o.groupOf[c]; !ok {
			removed = append(removed, c)
		}
	}
	sort.Strings(removed)
	if !sameList(removed, res.Removed) {
		t.Errorf("Removed = %v, want %v", res.Removed, removed)
	}

	// RecheckAfter: the earliest deadline or soak end.
	var recheck time.Duration
	for _, c := range o.all {
		s := st[c]
		var left time.Duration
		switch {
		case s.Status == Progressing && o.finite && !o.timedOut(s, now):
			left = s.LastTransitionTime.Add(o.deadline).Sub(now)
		case s.Status == Succeeded && !o.soaked(s, now):
			left = s.LastTransitionTime.Add(o.sc.rc.MinSuccessTime.Duration).Sub(now)
		default:
			continue
		}
		if recheck == 0 || left < recheck {
			recheck = left
		}
	}
	if recheck != res.RecheckAfter {
		t.Errorf("RecheckAfter = %v, want %v", res.RecheckAfter, recheck)
	}

	switch typ {
	case clusterv1alpha1.All:
		if res.Phase != PhaseStopped {
			var want []string
			for _, c := range o.all {
				if st[c].Status == ToApply {
					want = append(want, c)
				}
			}
			if !sameList(want, res.ToUpdate) {
				t.Errorf("All: ToUpdate = %v, want every cluster to apply %v", res.ToUpdate, want)
			}
		}

	case clusterv1alpha1.Progressive:
		mc := o.maxConcurrency()
		if res.MaxConcurrency != mc {
			t.Errorf("MaxConcurrency = %d, want %d", res.MaxConcurrency, mc)
		}
		// In flight outside the mandatory groups never exceeds maxConcurrency,
		// counting the clusters admitted now.
		inFlight := 0
		for _, c := range o.all {
			if !o.mandatory[o.groupOf[c]] && o.inFlight(st[c], now) {
				inFlight++
			}
		}
		admitted := 0
		for _, c := range res.ToUpdate {
			if !o.mandatory[o.groupOf[c]] {
				admitted++
				// ... and only once every mandatory group is done.
				for g := range o.order {
					if o.mandatory[g] && !o.groupDone(g, st, now) {
						t.Errorf("Progressive admitted %s before mandatory group %v was done", c, o.order[g])
					}
				}
			}
		}
		if admitted > 0 && inFlight+admitted > mc {
			t.Errorf("Progressive: %d in flight + %d admitted > maxConcurrency %d", inFlight, admitted, mc)
		}
		if admitted == 0 && inFlight > mc {
			t.Errorf("Progressive: %d in flight > maxConcurrency %d", inFlight, mc)
		}
		// Work conservation: a free slot is used when nothing holds the rollout.
		if res.Phase == PhaseProgressing && res.CurrentGroup == nil && inFlight+admitted < mc {
			for _, c := range o.all {
				if st[c].Status == ToApply && !slices.Contains(res.ToUpdate, c) {
					t.Errorf("Progressive: free slot (%d in flight, %d admitted, max %d) but %s waits", inFlight, admitted, mc, c)
					break
				}
			}
		}

	case clusterv1alpha1.ProgressivePerGroup:
		// Every admitted cluster is in one group, and every group before it is done.
		for _, c := range res.ToUpdate {
			g := o.groupOf[c]
			if g != o.groupOf[res.ToUpdate[0]] {
				t.Errorf("ProgressivePerGroup admitted clusters of several groups: %v", res.ToUpdate)
			}
			for k := 0; k < g; k++ {
				if !o.groupDone(k, st, now) {
					t.Errorf("ProgressivePerGroup admitted %s (group %d) before group %d %v was done", c, g, k, o.order[k])
				}
			}
			// ... and it is the whole group's remaining clusters.
			for _, other := range o.order[g] {
				if st[other].Status == ToApply && !slices.Contains(res.ToUpdate, other) {
					t.Errorf("ProgressivePerGroup admitted part of group %d: %v", g, res.ToUpdate)
				}
			}
		}
	}
}

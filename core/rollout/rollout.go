package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// Status is where a cluster stands in the rollout of the current generation.
// The zero value is ToApply, so a cluster missing from Input.States is ToApply.
type Status int

const (
	// ToApply: the cluster does not have the current generation yet.
	ToApply Status = iota
	// Progressing: the current generation was applied and has not reached
	// success yet.
	Progressing
	// Succeeded: the current generation reached success.
	Succeeded
	// Failed: the current generation reached a failed state.
	Failed
	// TimeOut: the cluster was Progressing for longer than progressDeadline
	// (as recorded by the caller from an earlier Result.TimedOut).
	TimeOut
	// Skip: the rollout does not concern this cluster; it counts as done.
	Skip
)

var statusNames = [...]string{"ToApply", "Progressing", "Succeeded", "Failed", "TimeOut", "Skip"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// ClusterState is a cluster's status for the current generation and when it
// entered that status. LastTransitionTime is the start of the progressDeadline
// clock for Progressing (when the cluster was admitted to the rollout, which
// the caller records) and of the minSuccessTime soak for Succeeded; it must be
// set for those two. (Read as "now", a zero time would restart the clock at
// every evaluation: a deadline that never expires, a soak that never ends.)
type ClusterState struct {
	Status             Status
	LastTransitionTime time.Time
}

// Group is one placement decision group: the clusters of the PlacementDecisions
// labelled cluster.open-cluster-management.io/decision-group-index=Index (and
// …/decision-group-name=Name). Callers should pass every group of the
// Placement's status.decisionGroups, empty ones included, so that mandatory
// groups resolve.
//
// Groups need not be sorted or clean: Evaluate orders them by Index, merges
// groups that share an Index, drops empty cluster names and, should a cluster
// be listed twice (a PlacementDecision page moving under a lister), keeps it in
// the group with the lowest Index.
type Group struct {
	Index    int32
	Name     string
	Clusters []string
}

// GroupRef names a decision group in a Result.
type GroupRef struct {
	Index int32
	Name  string
}

func (g GroupRef) String() string {
	if g.Name == "" {
		return fmt.Sprintf("decision group %d", g.Index)
	}
	return fmt.Sprintf("decision group %d %q", g.Index, g.Name)
}

// Input is everything one evaluation depends on.
type Input struct {
	// Strategy is the rollout strategy; only the member selected by Type is
	// read. An empty Type is All.
	Strategy clusterv1alpha1.RolloutStrategy
	// Groups are the placement's decision groups.
	Groups []Group
	// States holds each cluster's state for the current generation. Clusters
	// of Groups missing here are ToApply; entries for clusters in no group are
	// reported as Removed.
	States map[string]ClusterState
	// Now is the evaluation time. Evaluate reads no clock.
	Now time.Time
}

// Phase is the verdict on the rollout as a whole.
type Phase string

const (
	// PhaseProgressing: clusters are still to be updated, in flight, or failed
	// within maxFailures.
	PhaseProgressing Phase = "Progressing"
	// PhaseComplete: every cluster Succeeded at least minSuccessTime ago, or is
	// Skip.
	PhaseComplete Phase = "Complete"
	// PhaseStopped: maxFailures is breached; no cluster is admitted until the
	// failures recover or the strategy changes. Clusters already in flight keep
	// going.
	PhaseStopped Phase = "Stopped"
)

// Breach says why a rollout stopped.
type Breach struct {
	// Group is the decision group whose failure budget was exceeded
	// (ProgressivePerGroup, or a mandatory group); nil when failures are
	// counted over all clusters (All, Progressive).
	Group *GroupRef
	// Mandatory is true when Group is a mandatory decision group, which
	// tolerates no failure.
	Mandatory bool
	// Failures are the failed or timed-out clusters counted, sorted.
	Failures []string
	// MaxFailures is the threshold that was exceeded (len(Failures) > MaxFailures).
	MaxFailures int
}

// Counts classifies every cluster of the decision groups at Input.Now. The
// fields add up to Total.
type Counts struct {
	Total int
	// ToApply clusters do not have the current generation yet (including those
	// in Result.ToUpdate).
	ToApply int
	// Progressing clusters are within their progressDeadline.
	Progressing int
	// Soaking clusters Succeeded less than minSuccessTime ago.
	Soaking int
	// Succeeded clusters Succeeded at least minSuccessTime ago.
	Succeeded int
	// Failed clusters are in status Failed.
	Failed int
	// TimedOut clusters are in status TimeOut or passed their progressDeadline now.
	TimedOut int
	// Skipped clusters are in status Skip.
	Skipped int
}

// Result is the outcome of one evaluation.
type Result struct {
	Phase Phase
	// Message explains Phase for people (a condition message).
	Message string
	// ToUpdate are the ToApply clusters the strategy admits now: the caller
	// should apply the current generation to them and record them as
	// Progressing. Ordered as rolled out: mandatory groups first, then decision
	// groups by index, names sorted within a group. Empty when Stopped.
	ToUpdate []string
	// TimedOut are clusters that are Progressing but passed progressDeadline;
	// they count as failures. The caller should record them as TimeOut. Sorted.
	TimedOut []string
	// Removed are clusters with an entry in Input.States that are in no
	// decision group any more, so the caller can clean up. Sorted.
	Removed []string
	// Breach is set when Phase is Stopped.
	Breach *Breach
	// CurrentGroup is the decision group being rolled out group-wise: the first
	// unfinished group for ProgressivePerGroup, or the first unfinished
	// mandatory group for Progressive. Nil otherwise.
	CurrentGroup *GroupRef
	// MaxConcurrency is the effective concurrency limit for Progressive (0 for
	// the other types).
	MaxConcurrency int
	// RecheckAfter is how long after Input.Now a cluster's state changes by the
	// clock alone (a progressDeadline expiring, a minSuccessTime soak ending):
	// evaluate again then. Zero when nothing is pending.
	RecheckAfter time.Duration
	Counts       Counts
}

// Evaluate computes one step of a rollout: which clusters to update now, which
// timed out or were removed, and whether the rollout is Complete, Stopped or
// still Progressing. It is a pure function of its input. It fails only on an
// invalid strategy or state, with an error naming the offending field.
func Evaluate(in Input) (Result, error) {
	cfg, err := parseStrategy(in.Strategy)
	if err != nil {
		return Result{}, err
	}
	groups := normalizeGroups(in.Groups)
	mandatory, err := resolveMandatory(cfg, groups)
	if err != nil {
		return Result{}, err
	}
	for _, name := range sortedKeys(in.States) {
		st := in.States[name]
		if st.Status < ToApply || st.Status > Skip {
			return Result{}, fmt.Errorf("states[%q].status: unknown status %d", name, int(st.Status))
		}
		if st.LastTransitionTime.IsZero() {
			switch st.Status {
			case Progressing:
				return Result{}, fmt.Errorf("states[%q].lastTransitionTime: must be set for a Progressing cluster (when it was admitted to the rollout)", name)
			case Succeeded:
				return Result{}, fmt.Errorf("states[%q].lastTransitionTime: must be set for a Succeeded cluster (when it succeeded)", name)
			}
		}
	}
	e := newEvaluation(cfg, groups, mandatory, in.States, in.Now)
	return e.run(), nil
}

// group is a normalized decision group.
type group struct {
	ref      GroupRef
	clusters []string // sorted, unique across groups
}

func normalizeGroups(in []Group) []group {
	byIndex := map[int32]*group{}
	var indexes []int32
	for _, g := range in {
		ng, ok := byIndex[g.Index]
		if !ok {
			ng = &group{ref: GroupRef{Index: g.Index, Name: g.Name}}
			byIndex[g.Index] = ng
			indexes = append(indexes, g.Index)
		} else if ng.ref.Name == "" {
			ng.ref.Name = g.Name
		}
		ng.clusters = append(ng.clusters, g.Clusters...)
	}
	sort.Slice(indexes, func(i, j int) bool { return indexes[i] < indexes[j] })
	seen := map[string]bool{}
	out := make([]group, 0, len(indexes))
	for _, idx := range indexes {
		g := byIndex[idx]
		sort.Strings(g.clusters)
		clusters := make([]string, 0, len(g.clusters))
		for _, c := range g.clusters {
			if c == "" || seen[c] {
				continue
			}
			seen[c] = true
			clusters = append(clusters, c)
		}
		out = append(out, group{ref: g.ref, clusters: clusters})
	}
	return out
}

// resolveMandatory returns the positions (in groups) of the mandatory decision
// groups, ascending. A name selects every group with that name (a named group
// larger than clustersPerDecisionGroup is split into several); an index selects
// one group. A reference matching no group is an error, unless the placement
// has no decision groups at all yet.
func resolveMandatory(cfg *config, groups []group) ([]int, error) {
	if len(cfg.mandatory) == 0 {
		return nil, nil
	}
	picked := map[int]bool{}
	for i, m := range cfg.mandatory {
		found := false
		for pos, g := range groups {
			if (m.GroupName != "" && g.ref.Name == m.GroupName) || (m.GroupName == "" && g.ref.Index == m.GroupIndex) {
				picked[pos] = true
				found = true
			}
		}
		if found || len(groups) == 0 {
			continue
		}
		if m.GroupName != "" {
			return nil, fmt.Errorf("%s.mandatoryDecisionGroups[%d].groupName: no decision group is named %q", cfg.path, i, m.GroupName)
		}
		return nil, fmt.Errorf("%s.mandatoryDecisionGroups[%d].groupIndex: no decision group has index %d", cfg.path, i, m.GroupIndex)
	}
	out := make([]int, 0, len(picked))
	for pos := range picked {
		out = append(out, pos)
	}
	sort.Ints(out)
	return out, nil
}

// class is a cluster's status as seen at Input.Now.
type class int

const (
	cToApply     class = iota
	cProgressing       // Progressing within its deadline
	cSoaking           // Succeeded less than minSuccessTime ago
	cSucceeded         // Succeeded at least minSuccessTime ago
	cFailed
	cTimingOut // Progressing past its deadline: reported in Result.TimedOut
	cTimeOut   // recorded TimeOut
	cSkip
)

func (c class) inFlight() bool { return c == cProgressing || c == cSoaking }
func (c class) failure() bool  { return c == cFailed || c == cTimingOut || c == cTimeOut }

// done: nothing more will happen to the cluster by the rollout or the clock.
func (c class) done() bool { return c != cToApply && !c.inFlight() }

type evaluation struct {
	cfg       *config
	groups    []group
	mandatory map[int]bool // positions
	order     []int        // positions in rollout order: mandatory first, then by index
	states    map[string]ClusterState
	now       time.Time

	class map[string]class
	total int
	res   Result
	next  time.Time // earliest clock-driven change; zero if none
}

func newEvaluation(cfg *config, groups []group, mandatory []int, states map[string]ClusterState, now time.Time) *evaluation {
	e := &evaluation{cfg: cfg, groups: groups, mandatory: map[int]bool{}, states: states, now: now, class: map[string]class{}}
	for _, pos := range mandatory {
		e.mandatory[pos] = true
		e.order = append(e.order, pos)
	}
	for pos := range groups {
		if !e.mandatory[pos] {
			e.order = append(e.order, pos)
		}
	}
	return e
}

func (e *evaluation) run() Result {
	e.classify()
	switch e.cfg.typ {
	case clusterv1alpha1.All:
		e.all()
	case clusterv1alpha1.Progressive:
		e.progressive()
	case clusterv1alpha1.ProgressivePerGroup:
		e.progressivePerGroup()
	}
	if e.res.Breach != nil {
		e.res.Phase = PhaseStopped
		e.res.ToUpdate = nil
	} else if e.res.Counts.Succeeded+e.res.Counts.Skipped == e.total {
		e.res.Phase = PhaseComplete
	} else {
		e.res.Phase = PhaseProgressing
	}
	if !e.next.IsZero() {
		e.res.RecheckAfter = e.next.Sub(e.now)
	}
	e.res.Message = e.message()
	return e.res
}

// classify reads every cluster's state at e.now, collects the timed-out and
// removed clusters, the counts and the next clock-driven change.
func (e *evaluation) classify() {
	inGroups := map[string]bool{}
	for _, g := range e.groups {
		for _, name := range g.clusters {
			inGroups[name] = true
			c := e.classOf(e.states[name])
			e.class[name] = c
			e.total++
			switch c {
			case cToApply:
				e.res.Counts.ToApply++
			case cProgressing:
				e.res.Counts.Progressing++
			case cSoaking:
				e.res.Counts.Soaking++
			case cSucceeded:
				e.res.Counts.Succeeded++
			case cFailed:
				e.res.Counts.Failed++
			case cTimingOut:
				e.res.Counts.TimedOut++
				e.res.TimedOut = append(e.res.TimedOut, name)
			case cTimeOut:
				e.res.Counts.TimedOut++
			case cSkip:
				e.res.Counts.Skipped++
			}
		}
	}
	e.res.Counts.Total = e.total
	sort.Strings(e.res.TimedOut)
	for _, name := range sortedKeys(e.states) {
		if name != "" && !inGroups[name] {
			e.res.Removed = append(e.res.Removed, name)
		}
	}
}

func (e *evaluation) classOf(st ClusterState) class {
	since := st.LastTransitionTime
	switch st.Status {
	case Progressing:
		if !e.cfg.hasDeadline {
			return cProgressing
		}
		at := since.Add(e.cfg.deadline)
		if !e.now.Before(at) {
			return cTimingOut
		}
		e.pending(at)
		return cProgressing
	case Succeeded:
		at := since.Add(e.cfg.minSuccessTime)
		if !e.now.Before(at) {
			return cSucceeded
		}
		e.pending(at)
		return cSoaking
	case Failed:
		return cFailed
	case TimeOut:
		return cTimeOut
	case Skip:
		return cSkip
	default:
		return cToApply
	}
}

func (e *evaluation) pending(at time.Time) {
	if e.next.IsZero() || at.Before(e.next) {
		e.next = at
	}
}

// groupStatus summarizes one decision group.
type groupStatus struct {
	toApply  []string
	failures []string
	done     bool // no cluster ToApply or in flight
}

func (e *evaluation) status(pos int) groupStatus {
	var gs groupStatus
	gs.done = true
	for _, name := range e.groups[pos].clusters {
		c := e.class[name]
		switch {
		case c == cToApply:
			gs.toApply = append(gs.toApply, name)
			gs.done = false
		case c.inFlight():
			gs.done = false
		case c.failure():
			gs.failures = append(gs.failures, name)
		}
	}
	return gs
}

// failures lists every failed or timed-out cluster, sorted.
func (e *evaluation) failures() []string {
	var out []string
	for name, c := range e.class {
		if c.failure() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// totalBreach checks failures over all clusters against maxFailures resolved
// against the total (All and Progressive).
func (e *evaluation) totalBreach() *Breach {
	limit := e.cfg.maxFailures.of(e.total)
	if f := e.failures(); len(f) > limit {
		return &Breach{Failures: f, MaxFailures: limit}
	}
	return nil
}

// mandatoryBreach returns the first mandatory group (in rollout order) with a
// failure: mandatory groups tolerate none.
func (e *evaluation) mandatoryBreach() *Breach {
	for _, pos := range e.order {
		if !e.mandatory[pos] {
			continue
		}
		if gs := e.status(pos); len(gs.failures) > 0 {
			ref := e.groups[pos].ref
			return &Breach{Group: &ref, Mandatory: true, Failures: gs.failures}
		}
	}
	return nil
}

func (e *evaluation) all() {
	if e.res.Breach = e.totalBreach(); e.res.Breach != nil {
		return
	}
	for _, pos := range e.order {
		e.res.ToUpdate = append(e.res.ToUpdate, e.status(pos).toApply...)
	}
}

// admitMandatory rolls out the mandatory groups one at a time, each group's
// clusters all at once. It returns false while a mandatory group is unfinished.
func (e *evaluation) admitMandatory() bool {
	for _, pos := range e.order {
		if !e.mandatory[pos] {
			return true
		}
		if gs := e.status(pos); !gs.done {
			ref := e.groups[pos].ref
			e.res.CurrentGroup = &ref
			e.res.ToUpdate = gs.toApply
			return false
		}
	}
	return true
}

func (e *evaluation) progressive() {
	e.res.MaxConcurrency = e.maxConcurrency()
	if e.res.Breach = e.mandatoryBreach(); e.res.Breach != nil {
		return
	}
	if e.res.Breach = e.totalBreach(); e.res.Breach != nil {
		return
	}
	if !e.admitMandatory() {
		return
	}
	inFlight := 0
	for _, c := range e.class {
		if c.inFlight() {
			inFlight++
		}
	}
	slots := e.res.MaxConcurrency - inFlight
	for _, pos := range e.order {
		if slots <= 0 {
			break
		}
		if e.mandatory[pos] {
			continue
		}
		toApply := e.status(pos).toApply
		if len(toApply) > slots {
			toApply = toApply[:slots]
		}
		e.res.ToUpdate = append(e.res.ToUpdate, toApply...)
		slots -= len(toApply)
	}
}

// maxConcurrency resolves maxConcurrency: a count, or a percentage of all
// clusters rounded up (as OCM), at least 1. Unset (0, "0" or "0%"), it is the size of
// the largest non-mandatory decision group, which is the Placement's
// clustersPerDecisionGroup whenever that split the clusters, and every
// remaining cluster when the Placement has no decision strategy.
func (e *evaluation) maxConcurrency() int {
	mc := e.cfg.maxConcurrency
	n := 0
	if mc.zero() {
		for pos, g := range e.groups {
			if !e.mandatory[pos] && len(g.clusters) > n {
				n = len(g.clusters)
			}
		}
	} else {
		n = mc.of(e.total)
	}
	return max(n, 1)
}

func (e *evaluation) progressivePerGroup() {
	// Every group's budget is checked, not only the current one: a finished
	// group whose clusters later fail beyond its budget stops the rollout too.
	for _, pos := range e.order {
		gs := e.status(pos)
		ref := e.groups[pos].ref
		if e.mandatory[pos] {
			if len(gs.failures) > 0 {
				e.res.Breach = &Breach{Group: &ref, Mandatory: true, Failures: gs.failures}
				return
			}
			continue
		}
		if limit := e.cfg.maxFailures.of(len(e.groups[pos].clusters)); len(gs.failures) > limit {
			e.res.Breach = &Breach{Group: &ref, Failures: gs.failures, MaxFailures: limit}
			return
		}
	}
	for _, pos := range e.order {
		if gs := e.status(pos); !gs.done {
			ref := e.groups[pos].ref
			e.res.CurrentGroup = &ref
			e.res.ToUpdate = gs.toApply
			return
		}
	}
}

func (e *evaluation) message() string {
	c := e.res.Counts
	switch e.res.Phase {
	case PhaseComplete:
		if c.Total == 0 {
			return "complete: no clusters selected"
		}
		msg := fmt.Sprintf("complete: %d of %d clusters succeeded", c.Succeeded, c.Total)
		if c.Skipped > 0 {
			msg += fmt.Sprintf(", %d skipped", c.Skipped)
		}
		return msg
	case PhaseStopped:
		b := e.res.Breach
		var msg string
		switch {
		case b.Mandatory:
			msg = fmt.Sprintf("stopped: mandatory %s: %s failed or timed out (%s); mandatory decision groups tolerate no failures",
				b.Group, plural(len(b.Failures), "cluster"), list(b.Failures))
		case b.Group != nil:
			size := 0
			for _, g := range e.groups {
				if g.ref == *b.Group {
					size = len(g.clusters)
				}
			}
			msg = fmt.Sprintf("stopped: %s: %d of %d clusters failed or timed out (%s), more than maxFailures %s",
				b.Group, len(b.Failures), size, list(b.Failures), e.cfg.maxFailures.describe(b.MaxFailures, size))
		default:
			msg = fmt.Sprintf("stopped: %d of %d clusters failed or timed out (%s), more than maxFailures %s",
				len(b.Failures), c.Total, list(b.Failures), e.cfg.maxFailures.describe(b.MaxFailures, c.Total))
		}
		if n := c.Progressing + c.Soaking; n > 0 {
			msg += fmt.Sprintf("; %s still in flight", plural(n, "cluster"))
		}
		return msg + "; no further clusters are updated"
	default:
		msg := fmt.Sprintf("progressing: %d of %d clusters succeeded", c.Succeeded, c.Total)
		parts := []string{}
		if c.Skipped > 0 {
			parts = append(parts, fmt.Sprintf("%d skipped", c.Skipped))
		}
		if c.Progressing > 0 {
			parts = append(parts, fmt.Sprintf("%d progressing", c.Progressing))
		}
		if c.Soaking > 0 {
			parts = append(parts, fmt.Sprintf("%d within minSuccessTime", c.Soaking))
		}
		if c.ToApply > 0 {
			parts = append(parts, fmt.Sprintf("%d to apply (%d now)", c.ToApply, len(e.res.ToUpdate)))
		}
		if f := e.failures(); len(f) > 0 {
			parts = append(parts, fmt.Sprintf("%d failed or timed out within maxFailures (%s)", len(f), list(f)))
		}
		if len(parts) > 0 {
			msg += ", " + strings.Join(parts, ", ")
		}
		if g := e.res.CurrentGroup; g != nil {
			msg += "; rolling out " + g.String()
		}
		return msg
	}
}

// list joins names for a message, eliding past ten.
func list(names []string) string {
	const limit = 10
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func sortedKeys(m map[string]ClusterState) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

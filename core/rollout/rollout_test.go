package rollout

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// ago is a state entered d before now.
func ago(s Status, d time.Duration) ClusterState {
	return ClusterState{Status: s, LastTransitionTime: now.Add(-d)}
}

// states builds a state map: every name in names gets st.
func states(st ClusterState, names ...string) map[string]ClusterState {
	m := map[string]ClusterState{}
	for _, n := range names {
		m[n] = st
	}
	return m
}

// merge combines state maps, later ones winning.
func merge(ms ...map[string]ClusterState) map[string]ClusterState {
	out := map[string]ClusterState{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func grp(index int32, name string, clusters ...string) Group {
	return Group{Index: index, Name: name, Clusters: clusters}
}

type opt func(*clusterv1alpha1.RolloutConfig)

func soak(d time.Duration) opt {
	return func(c *clusterv1alpha1.RolloutConfig) { c.MinSuccessTime = metav1.Duration{Duration: d} }
}
func deadline(s string) opt { return func(c *clusterv1alpha1.RolloutConfig) { c.ProgressDeadline = s } }
func timeout(s string) opt  { return func(c *clusterv1alpha1.RolloutConfig) { c.Timeout = s } }
func maxFail(v intstr.IntOrString) opt {
	return func(c *clusterv1alpha1.RolloutConfig) { c.MaxFailures = v }
}

func num(n int32) intstr.IntOrString  { return intstr.FromInt32(n) }
func str(s string) intstr.IntOrString { return intstr.FromString(s) }

func rolloutConfig(opts []opt) clusterv1alpha1.RolloutConfig {
	var c clusterv1alpha1.RolloutConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

func allS(opts ...opt) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All, All: &clusterv1alpha1.RolloutAll{RolloutConfig: rolloutConfig(opts)}}
}

func progS(mc intstr.IntOrString, mandatory []clusterv1alpha1.MandatoryDecisionGroup, opts ...opt) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
		RolloutConfig:           rolloutConfig(opts),
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory},
		MaxConcurrency:          mc,
	}}
}

func groupS(mandatory []clusterv1alpha1.MandatoryDecisionGroup, opts ...opt) clusterv1alpha1.RolloutStrategy {
	return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, ProgressivePerGroup: &clusterv1alpha1.RolloutProgressivePerGroup{
		RolloutConfig:           rolloutConfig(opts),
		MandatoryDecisionGroups: clusterv1alpha1.MandatoryDecisionGroups{MandatoryDecisionGroups: mandatory},
	}}
}

func byName(names ...string) []clusterv1alpha1.MandatoryDecisionGroup {
	var out []clusterv1alpha1.MandatoryDecisionGroup
	for _, n := range names {
		out = append(out, clusterv1alpha1.MandatoryDecisionGroup{GroupName: n})
	}
	return out
}

func byIndex(indexes ...int32) []clusterv1alpha1.MandatoryDecisionGroup {
	var out []clusterv1alpha1.MandatoryDecisionGroup
	for _, i := range indexes {
		out = append(out, clusterv1alpha1.MandatoryDecisionGroup{GroupIndex: i})
	}
	return out
}

func ref(index int32, name string) *GroupRef { return &GroupRef{Index: index, Name: name} }

// fleet: a named canary group and two unnamed groups, 8 clusters.
var fleet = []Group{
	grp(0, "canary", "c1", "c2"),
	grp(1, "", "a1", "a2", "a3"),
	grp(2, "", "b1", "b2", "b3"),
}

var fleetNames = []string{"c1", "c2", "a1", "a2", "a3", "b1", "b2", "b3"}

type want struct {
	phase    Phase
	toUpdate []string
	timedOut []string
	removed  []string
	recheck  time.Duration
	breach   *Breach
	current  *GroupRef // compared when set
	noCur    bool      // CurrentGroup must be nil
	maxConc  int       // compared when set
	msg      []string  // substrings of Message
}

type tcase struct {
	name     string
	strategy clusterv1alpha1.RolloutStrategy
	groups   []Group
	states   map[string]ClusterState
	want     want
}

func run(t *testing.T, cases []tcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Evaluate(Input{Strategy: tc.strategy, Groups: tc.groups, States: tc.states, Now: now})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			check(t, got, tc.want)
		})
	}
}

func check(t *testing.T, got Result, w want) {
	t.Helper()
	if got.Phase != w.phase {
		t.Errorf("Phase = %s, want %s (message %q)", got.Phase, w.phase, got.Message)
	}
	if !sameList(got.ToUpdate, w.toUpdate) {
		t.Errorf("ToUpdate = %v, want %v", got.ToUpdate, w.toUpdate)
	}
	if !sameList(got.TimedOut, w.timedOut) {
		t.Errorf("TimedOut = %v, want %v", got.TimedOut, w.timedOut)
	}
	if !sameList(got.Removed, w.removed) {
		t.Errorf("Removed = %v, want %v", got.Removed, w.removed)
	}
	if got.RecheckAfter != w.recheck {
		t.Errorf("RecheckAfter = %v, want %v", got.RecheckAfter, w.recheck)
	}
	if !reflect.DeepEqual(got.Breach, w.breach) {
		t.Errorf("Breach = %s, want %s", fmtBreach(got.Breach), fmtBreach(w.breach))
	}
	if w.current != nil && !reflect.DeepEqual(got.CurrentGroup, w.current) {
		t.Errorf("CurrentGroup = %v, want %v", got.CurrentGroup, w.current)
	}
	if w.noCur && got.CurrentGroup != nil {
		t.Errorf("CurrentGroup = %v, want nil", got.CurrentGroup)
	}
	if w.maxConc != 0 && got.MaxConcurrency != w.maxConc {
		t.Errorf("MaxConcurrency = %d, want %d", got.MaxConcurrency, w.maxConc)
	}
	for _, m := range w.msg {
		if !strings.Contains(got.Message, m) {
			t.Errorf("Message %q does not contain %q", got.Message, m)
		}
	}
}

func sameList(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func fmtBreach(b *Breach) string {
	if b == nil {
		return "nil"
	}
	g := "all clusters"
	if b.Group != nil {
		g = b.Group.String()
	}
	return g + " mandatory=" + boolStr(b.Mandatory) + " failures=" + strings.Join(b.Failures, ",") + " max=" + strconv.Itoa(b.MaxFailures)
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestAll(t *testing.T) {
	run(t, []tcase{
		{
			name:     "fresh rollout updates every cluster at once in group order",
			strategy: allS(),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: fleetNames, noCur: true},
		},
		{
			name:     "empty type defaults to All and a nil member to defaults",
			strategy: clusterv1alpha1.RolloutStrategy{},
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: fleetNames},
		},
		{
			name:     "only clusters still to apply are returned",
			strategy: allS(),
			groups:   fleet,
			states:   merge(states(ago(Progressing, time.Minute), "a1"), states(ago(Succeeded, time.Minute), "c1")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c2", "a2", "a3", "b1", "b2", "b3"}},
		},
		{
			name:     "every cluster succeeded without soak is Complete",
			strategy: allS(),
			groups:   fleet,
			states:   states(ago(Succeeded, time.Second), fleetNames...),
			want:     want{phase: PhaseComplete, msg: []string{"complete: 8 of 8 clusters succeeded"}},
		},
		{
			name:     "minSuccessTime holds Complete back and RecheckAfter is the shortest soak left",
			strategy: allS(soak(5 * time.Minute)),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, 2*time.Minute), fleetNames...), states(ago(Succeeded, 4*time.Minute), "b3")),
			want:     want{phase: PhaseProgressing, recheck: time.Minute, msg: []string{"8 within minSuccessTime"}},
		},
		{
			name:     "minSuccessTime elapsed exactly is Complete",
			strategy: allS(soak(5 * time.Minute)),
			groups:   fleet,
			states:   states(ago(Succeeded, 5*time.Minute), fleetNames...),
			want:     want{phase: PhaseComplete},
		},
		{
			name:     "progressDeadline pending sets RecheckAfter",
			strategy: allS(deadline("10m")),
			groups:   fleet,
			states:   states(ago(Progressing, 9*time.Minute), "a1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2", "a2", "a3", "b1", "b2", "b3"}, recheck: time.Minute},
		},
		{
			name:     "progressDeadline expired times out and breaches the default maxFailures 0",
			strategy: allS(deadline("10m")),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Hour), fleetNames...), states(ago(Progressing, 10*time.Minute), "a1")),
			want: want{phase: PhaseStopped, timedOut: []string{"a1"}, breach: &Breach{Failures: []string{"a1"}},
				msg: []string{"stopped: 1 of 8 clusters failed or timed out (a1), more than maxFailures 0"}},
		},
		{
			name:     "failures within maxFailures do not stop",
			strategy: allS(maxFail(num(1))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2", "a2", "a3", "b1", "b2", "b3"}},
		},
		{
			name:     "a stop admits no new cluster",
			strategy: allS(maxFail(num(1))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1", "a2"),
			want:     want{phase: PhaseStopped, breach: &Breach{Failures: []string{"a1", "a2"}, MaxFailures: 1}},
		},
		{
			name:     "maxFailures percentage of all clusters rounds up as OCM: 20% of 8 is 2, two failures go on",
			strategy: allS(maxFail(str("20%"))),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Minute), fleetNames...), states(ago(Failed, time.Minute), "a1", "b2")),
			want:     want{phase: PhaseProgressing, msg: []string{"2 failed or timed out within maxFailures (a1, b2)"}},
		},
		{
			name:     "maxFailures percentage: 20% of 8, three failures stop",
			strategy: allS(maxFail(str("20%"))),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Minute), fleetNames...), states(ago(Failed, time.Minute), "a1", "b2", "c1")),
			want: want{phase: PhaseStopped, breach: &Breach{Failures: []string{"a1", "b2", "c1"}, MaxFailures: 2},
				msg: []string{"more than maxFailures 2 (20% of 8)"}},
		},
	})
}

func TestProgressive(t *testing.T) {
	run(t, []tcase{
		{
			name:     "maxConcurrency count admits that many clusters in decision group order",
			strategy: progS(num(2), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2"}, maxConc: 2, noCur: true},
		},
		{
			name:     "decision group order beats name order",
			strategy: progS(num(3), nil),
			groups:   []Group{grp(0, "", "z2", "z1"), grp(1, "", "a2", "a1")},
			want:     want{phase: PhaseProgressing, toUpdate: []string{"z1", "z2", "a1"}},
		},
		{
			name:     "progressing and soaking clusters fill the slots",
			strategy: progS(num(2), nil, soak(5*time.Minute)),
			groups:   fleet,
			states:   merge(states(ago(Progressing, time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, recheck: 4 * time.Minute},
		},
		{
			name:     "a soak that ended frees its slot",
			strategy: progS(num(2), nil, soak(5*time.Minute)),
			groups:   fleet,
			states:   merge(states(ago(Progressing, time.Minute), "c1"), states(ago(Succeeded, 5*time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1"}},
		},
		{
			name:     "maxConcurrency percentage is of all clusters: 50% of 8 is 4",
			strategy: progS(str("50%"), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2", "a1", "a2"}, maxConc: 4},
		},
		{
			name:     "maxConcurrency percentage rounds up as OCM: 10% of 8 is 1",
			strategy: progS(str("10%"), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1"}, maxConc: 1},
		},
		{
			name:     "maxConcurrency 100% is every cluster",
			strategy: progS(str("100%"), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: fleetNames, maxConc: 8},
		},
		{
			name:     "maxConcurrency as a string count",
			strategy: progS(str("3"), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2", "a1"}, maxConc: 3},
		},
		{
			name:     "maxConcurrency above the cluster count admits everything",
			strategy: progS(num(50), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: fleetNames, maxConc: 50},
		},
		{
			name:     "unset maxConcurrency is the largest non-mandatory group",
			strategy: progS(intstr.IntOrString{}, byName("canary")),
			groups:   []Group{grp(0, "canary", "c1", "c2", "c3", "c4", "c5"), grp(1, "", "a1", "a2", "a3"), grp(2, "", "b1", "b2")},
			states:   states(ago(Succeeded, time.Minute), "c1", "c2", "c3", "c4", "c5"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1", "a2", "a3"}, maxConc: 3},
		},
		{
			name:     "unset maxConcurrency without a decision strategy (one group) is every cluster",
			strategy: progS(intstr.IntOrString{}, nil),
			groups:   []Group{grp(0, "", "e", "d", "c", "b", "a")},
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a", "b", "c", "d", "e"}, maxConc: 5},
		},
		{
			name:     "maxConcurrency 0% is unset",
			strategy: progS(str("0%"), nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2", "a1"}, maxConc: 3},
		},
		{
			name:     "mandatory group by name goes first, all its clusters, beyond maxConcurrency",
			strategy: progS(num(1), byName("canary")),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2"}, current: ref(0, "canary"), maxConc: 1},
		},
		{
			name:     "mandatory group by index goes first whatever its position",
			strategy: progS(num(1), byIndex(2)),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"b1", "b2", "b3"}, current: ref(2, "")},
		},
		{
			name:     "mandatory group by index 0",
			strategy: progS(num(1), byIndex(0)),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2"}, current: ref(0, "canary")},
		},
		{
			name:     "a mandatory group in flight holds the others back",
			strategy: progS(num(5), byName("canary")),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Minute), "c1"), states(ago(Progressing, time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, current: ref(0, "canary")},
		},
		{
			name:     "a soaking mandatory group holds the others back until minSuccessTime",
			strategy: progS(num(5), byName("canary"), soak(5*time.Minute)),
			groups:   fleet,
			states:   states(ago(Succeeded, 2*time.Minute), "c1", "c2"),
			want:     want{phase: PhaseProgressing, recheck: 3 * time.Minute, current: ref(0, "canary")},
		},
		{
			name:     "once the mandatory groups are done maxConcurrency applies",
			strategy: progS(num(2), byName("canary")),
			groups:   fleet,
			states:   states(ago(Succeeded, time.Minute), "c1", "c2"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1", "a2"}, noCur: true},
		},
		{
			name:     "a mandatory name selecting a split group rolls its parts one at a time",
			strategy: progS(num(1), byName("canary")),
			groups:   []Group{grp(0, "canary", "c1"), grp(1, "canary", "c2"), grp(2, "", "a1")},
			states:   states(ago(Succeeded, time.Minute), "c1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c2"}, current: ref(1, "canary")},
		},
		{
			name:     "a mandatory failure stops even within maxFailures",
			strategy: progS(num(1), byName("canary"), maxFail(num(5))),
			groups:   fleet,
			states:   merge(states(ago(Failed, time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want: want{phase: PhaseStopped, breach: &Breach{Group: ref(0, "canary"), Mandatory: true, Failures: []string{"c1"}},
				msg: []string{`mandatory decision group 0 "canary": 1 cluster failed or timed out (c1); mandatory decision groups tolerate no failures`}},
		},
		{
			name:     "a recorded TimeOut in a mandatory group stops",
			strategy: progS(num(1), byName("canary"), maxFail(num(5))),
			groups:   fleet,
			states:   merge(states(ago(TimeOut, time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want:     want{phase: PhaseStopped, breach: &Breach{Group: ref(0, "canary"), Mandatory: true, Failures: []string{"c1"}}},
		},
		{
			name:     "a mandatory cluster passing its deadline times out and stops",
			strategy: progS(num(1), byName("canary"), deadline("10m"), maxFail(num(5))),
			groups:   fleet,
			states:   merge(states(ago(Progressing, 11*time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want: want{phase: PhaseStopped, timedOut: []string{"c1"},
				breach: &Breach{Group: ref(0, "canary"), Mandatory: true, Failures: []string{"c1"}}},
		},
		{
			name:     "a failed cluster frees its slot (OCM holds it until progressDeadline)",
			strategy: progS(num(1), nil, maxFail(num(1))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "c1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c2"}},
		},
		{
			name:     "a timed-out cluster frees its slot",
			strategy: progS(num(1), nil, maxFail(num(1)), deadline("10m")),
			groups:   fleet,
			states:   states(ago(Progressing, 10*time.Minute), "c1"),
			want:     want{phase: PhaseProgressing, timedOut: []string{"c1"}, toUpdate: []string{"c2"}},
		},
		{
			name:     "failures are counted over every cluster, not only the concurrency window",
			strategy: progS(num(1), nil, maxFail(num(1))),
			groups:   fleet,
			states:   merge(states(ago(Progressing, time.Minute), "c1"), states(ago(Failed, time.Minute), "b1", "b2")),
			want:     want{phase: PhaseStopped, breach: &Breach{Failures: []string{"b1", "b2"}, MaxFailures: 1}},
		},
		{
			name:     "exactly maxFailures failures goes on",
			strategy: progS(num(1), nil, maxFail(num(2))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1", "a2"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1"}, msg: []string{"2 failed or timed out within maxFailures (a1, a2)"}},
		},
		{
			name:     "maxFailures 0 stops at the first failure",
			strategy: progS(num(1), nil, maxFail(num(0))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1"),
			want:     want{phase: PhaseStopped, breach: &Breach{Failures: []string{"a1"}}},
		},
		{
			name:     "maxFailures \"0\" as a string stops at the first failure",
			strategy: progS(num(1), nil, maxFail(str("0"))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1"),
			want:     want{phase: PhaseStopped, breach: &Breach{Failures: []string{"a1"}}},
		},
		{
			name:     "maxFailures percentage is of all clusters: 25% of 8 is 2, three failures stop",
			strategy: progS(num(1), nil, maxFail(str("25%"))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1", "a2", "b1"),
			want: want{phase: PhaseStopped, breach: &Breach{Failures: []string{"a1", "a2", "b1"}, MaxFailures: 2},
				msg: []string{"3 of 8 clusters failed or timed out (a1, a2, b1), more than maxFailures 2 (25% of 8)"}},
		},
		{
			name:     "maxFailures percentage: 25% of 8, two failures go on",
			strategy: progS(num(1), nil, maxFail(str("25%"))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "a1", "a2"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1"}},
		},
		{
			name:     "maxFailures above the cluster count tolerates every failure (OCM falls back to 0)",
			strategy: progS(num(1), nil, maxFail(num(20))),
			groups:   fleet,
			states:   states(ago(Failed, time.Minute), "c1", "c2", "a1", "a2", "a3", "b1", "b2"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"b3"}},
		},
		{
			name:     "after a stop clusters in flight keep going and still set RecheckAfter",
			strategy: progS(num(3), nil, deadline("10m")),
			groups:   fleet,
			states:   merge(states(ago(Failed, time.Minute), "c1"), states(ago(Progressing, 4*time.Minute), "c2")),
			want: want{phase: PhaseStopped, recheck: 6 * time.Minute, breach: &Breach{Failures: []string{"c1"}},
				msg: []string{"1 cluster still in flight", "no further clusters are updated"}},
		},
		{
			name:     "a new cluster in a finished mandatory group pauses the others",
			strategy: progS(num(3), byName("canary")),
			groups:   []Group{grp(0, "canary", "c1", "c2", "c3"), grp(1, "", "a1", "a2", "a3")},
			states:   merge(states(ago(Succeeded, time.Hour), "c1", "c2"), states(ago(Progressing, time.Minute), "a1")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c3"}, current: ref(0, "canary")},
		},
		{
			name:     "RecheckAfter is the earliest of deadlines and soaks",
			strategy: progS(num(2), nil, deadline("10m"), soak(5*time.Minute)),
			groups:   fleet,
			states:   merge(states(ago(Progressing, 8*time.Minute), "c1"), states(ago(Succeeded, 4*time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, recheck: time.Minute},
		},
		{
			name:     "Complete with skipped clusters",
			strategy: progS(num(1), nil, soak(time.Minute)),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Hour), fleetNames...), states(ago(Skip, time.Minute), "a2")),
			want:     want{phase: PhaseComplete, msg: []string{"complete: 7 of 8 clusters succeeded, 1 skipped"}},
		},
	})
}

func TestProgressivePerGroup(t *testing.T) {
	run(t, []tcase{
		{
			name:     "a fresh rollout starts with the first group",
			strategy: groupS(nil),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2"}, current: ref(0, "canary"), msg: []string{`rolling out decision group 0 "canary"`}},
		},
		{
			name:     "the next group waits while the current one is in flight",
			strategy: groupS(nil),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Minute), "c1"), states(ago(Progressing, time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, current: ref(0, "canary")},
		},
		{
			name:     "issue 327: the next group waits for minSuccessTime and RecheckAfter says when",
			strategy: groupS(nil, soak(5*time.Minute)),
			groups:   fleet,
			states:   states(ago(Succeeded, 2*time.Minute), "c1", "c2"),
			want:     want{phase: PhaseProgressing, recheck: 3 * time.Minute, current: ref(0, "canary")},
		},
		{
			name:     "issue 327: the next group starts once minSuccessTime is met",
			strategy: groupS(nil, soak(5*time.Minute)),
			groups:   fleet,
			states:   states(ago(Succeeded, 5*time.Minute), "c1", "c2"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1", "a2", "a3"}, current: ref(1, "")},
		},
		{
			name:     "issue 327: failures within the group's budget do not block the next group",
			strategy: groupS(nil, maxFail(num(1))),
			groups:   fleet,
			states:   merge(states(ago(Failed, time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1", "a2", "a3"}, current: ref(1, "")},
		},
		{
			name:     "issue 327: failures beyond the group's budget stop the rollout",
			strategy: groupS(nil),
			groups:   fleet,
			states:   merge(states(ago(Failed, time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want: want{phase: PhaseStopped, breach: &Breach{Group: ref(0, "canary"), Failures: []string{"c1"}},
				msg: []string{`stopped: decision group 0 "canary": 1 of 2 clusters failed or timed out (c1), more than maxFailures 0`}},
		},
		{
			name:     "maxFailures percentage is of the group: 50% of 4 tolerates 2",
			strategy: groupS(nil, maxFail(str("50%"))),
			groups:   []Group{grp(0, "", "a1", "a2", "a3", "a4"), grp(1, "", "b1")},
			states:   merge(states(ago(Failed, time.Minute), "a1", "a2"), states(ago(Succeeded, time.Minute), "a3", "a4")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"b1"}},
		},
		{
			name:     "maxFailures percentage is of the group: 50% of 4, three failures stop",
			strategy: groupS(nil, maxFail(str("50%"))),
			groups:   []Group{grp(0, "", "a1", "a2", "a3", "a4"), grp(1, "", "b1")},
			states:   merge(states(ago(Failed, time.Minute), "a1", "a2", "a3"), states(ago(Succeeded, time.Minute), "a4")),
			want: want{phase: PhaseStopped, breach: &Breach{Group: ref(0, ""), Failures: []string{"a1", "a2", "a3"}, MaxFailures: 2},
				msg: []string{"decision group 0: 3 of 4 clusters failed or timed out (a1, a2, a3), more than maxFailures 2 (50% of 4)"}},
		},
		{
			name:     "failures are counted per group, not accumulated",
			strategy: groupS(nil, maxFail(num(1))),
			groups:   fleet,
			states: merge(states(ago(Succeeded, time.Minute), "c2", "a2", "a3"),
				states(ago(Failed, time.Minute), "c1", "a1")),
			want: want{phase: PhaseProgressing, toUpdate: []string{"b1", "b2", "b3"}, current: ref(2, "")},
		},
		{
			name:     "a cluster timing out now counts and lets the next group start",
			strategy: groupS(nil, maxFail(num(1)), deadline("10m")),
			groups:   fleet,
			states:   merge(states(ago(Progressing, 10*time.Minute), "c1"), states(ago(Succeeded, time.Minute), "c2")),
			want:     want{phase: PhaseProgressing, timedOut: []string{"c1"}, toUpdate: []string{"a1", "a2", "a3"}},
		},
		{
			name:     "a mandatory group goes first whatever its index",
			strategy: groupS(byIndex(2)),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"b1", "b2", "b3"}, current: ref(2, "")},
		},
		{
			name:     "after the mandatory group the others follow in index order",
			strategy: groupS(byIndex(2)),
			groups:   fleet,
			states:   states(ago(Succeeded, time.Minute), "b1", "b2", "b3"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2"}, current: ref(0, "canary")},
		},
		{
			name:     "several mandatory groups go in index order",
			strategy: groupS(append(byIndex(2), byName("canary")...)),
			groups:   fleet,
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1", "c2"}, current: ref(0, "canary")},
		},
		{
			name:     "a mandatory group tolerates no failure",
			strategy: groupS(byName("canary"), maxFail(num(5))),
			groups:   fleet,
			states:   merge(states(ago(Failed, time.Minute), "c2"), states(ago(Succeeded, time.Minute), "c1")),
			want:     want{phase: PhaseStopped, breach: &Breach{Group: ref(0, "canary"), Mandatory: true, Failures: []string{"c2"}}},
		},
		{
			name:     "a finished group failing later beyond its budget stops",
			strategy: groupS(nil),
			groups:   fleet,
			states: merge(states(ago(Failed, time.Minute), "c1"), states(ago(Succeeded, time.Hour), "c2"),
				states(ago(Progressing, time.Minute), "a1", "a2", "a3")),
			want: want{phase: PhaseStopped, breach: &Breach{Group: ref(0, "canary"), Failures: []string{"c1"}}, msg: []string{"3 clusters still in flight"}},
		},
		{
			name:     "a failed cluster within budget keeps the rollout from Complete",
			strategy: groupS(nil, maxFail(num(1))),
			groups:   fleet,
			states:   merge(states(ago(Succeeded, time.Hour), fleetNames...), states(ago(Failed, time.Minute), "b1")),
			want:     want{phase: PhaseProgressing, msg: []string{"7 of 8 clusters succeeded", "1 failed or timed out within maxFailures (b1)"}},
		},
		{
			name:     "all groups done is Complete",
			strategy: groupS(byName("canary"), soak(time.Minute)),
			groups:   fleet,
			states:   states(ago(Succeeded, time.Minute), fleetNames...),
			want:     want{phase: PhaseComplete, noCur: true},
		},
	})
}

// TestChangingGroups covers decision groups that change between evaluations.
func TestChangingGroups(t *testing.T) {
	done := states(ago(Succeeded, time.Hour), "c1", "c2")
	run(t, []tcase{
		{
			name:     "a new cluster in a finished group is rolled out before later groups continue",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "canary", "c1", "c2", "c3"), grp(1, "", "a1", "a2", "a3"), grp(2, "", "b1", "b2", "b3")},
			states:   merge(done, states(ago(Progressing, time.Minute), "a1", "a2", "a3")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c3"}, current: ref(0, "canary")},
		},
		{
			name:     "a new cluster in the current group joins it",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "canary", "c1", "c2"), grp(1, "", "a1", "a2", "a3", "a4")},
			states:   merge(done, states(ago(Progressing, time.Minute), "a1", "a2", "a3")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a4"}, current: ref(1, "")},
		},
		{
			name:     "re-numbered groups: a done group and an in-flight group shifted up are neither restarted nor skipped",
			strategy: groupS(nil),
			groups:   []Group{grp(5, "canary", "c1", "c2"), grp(6, "", "a1", "a2", "a3"), grp(7, "", "b1", "b2", "b3")},
			states:   merge(done, states(ago(Progressing, time.Minute), "a1"), states(ago(Succeeded, time.Minute), "a2", "a3")),
			want:     want{phase: PhaseProgressing, current: ref(6, "")},
		},
		{
			name:     "re-grouped clusters: the first group holding an unfinished cluster is current, later ones wait",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "", "a1", "c1", "c2"), grp(1, "", "a2", "a3", "b1"), grp(2, "", "b2", "b3")},
			states:   merge(done, states(ago(Progressing, time.Minute), "a1", "a2", "a3")),
			want:     want{phase: PhaseProgressing, current: ref(0, "")},
		},
		{
			name:     "re-grouped clusters: once the earlier groups finish the mixed group's new clusters go",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "", "a1", "c1", "c2"), grp(1, "", "a2", "a3", "b1"), grp(2, "", "b2", "b3")},
			states:   merge(done, states(ago(Succeeded, time.Minute), "a1", "a2", "a3")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"b1"}, current: ref(1, "")},
		},
		{
			name:     "a new group inserted in front is rolled out first; later unstarted groups wait",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "new", "n1"), grp(1, "canary", "c1", "c2"), grp(2, "", "a1", "a2", "a3"), grp(3, "", "b1", "b2", "b3")},
			states:   merge(done, states(ago(Succeeded, time.Minute), "a1", "a2", "a3")),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"n1"}, current: ref(0, "new")},
		},
		{
			name:     "non-contiguous group indexes are all rolled out (OCM walks 0..n-1)",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "", "a1"), grp(2, "", "b1"), grp(5, "", "d1")},
			states:   states(ago(Succeeded, time.Minute), "a1", "b1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"d1"}, current: ref(5, "")},
		},
		{
			name:     "an empty group is passed over",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "", "a1"), grp(1, "", ""), grp(2, "", "b1")},
			states:   states(ago(Succeeded, time.Minute), "a1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"b1"}, current: ref(2, "")},
		},
		{
			name:     "removed clusters are reported and their failures no longer count",
			strategy: allS(),
			groups:   []Group{grp(0, "", "a1")},
			states: merge(states(ago(Succeeded, time.Minute), "a1"), states(ago(Failed, time.Minute), "gone1"),
				states(ago(Progressing, time.Minute), "gone2"), states(ClusterState{}, "gone0")),
			want: want{phase: PhaseComplete, removed: []string{"gone0", "gone1", "gone2"}},
		},
		{
			name:     "a cluster moving to another group is not removed",
			strategy: groupS(nil),
			groups:   []Group{grp(0, "", "a1"), grp(1, "", "a2", "c1")},
			states:   states(ago(Succeeded, time.Minute), "a1", "c1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a2"}, current: ref(1, "")},
		},
		{
			name:     "Progressive: removed clusters free their slots",
			strategy: progS(num(1), nil),
			groups:   []Group{grp(0, "", "a1", "a2")},
			states:   states(ago(Progressing, time.Minute), "gone"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1"}, removed: []string{"gone"}},
		},
	})
}

func TestGroupNormalization(t *testing.T) {
	run(t, []tcase{
		{
			name:     "groups are sorted, merged by index, de-duplicated and stripped of empty names",
			strategy: groupS(nil),
			groups:   []Group{grp(2, "", "b1"), grp(0, "", "a2", "a1", ""), grp(0, "x", "a3"), grp(1, "", "a1", "c1")},
			want:     want{phase: PhaseProgressing, toUpdate: []string{"a1", "a2", "a3"}, current: ref(0, "x")},
		},
		{
			name:     "a cluster listed twice belongs to the lower index",
			strategy: groupS(nil),
			groups:   []Group{grp(1, "", "a1", "c1"), grp(0, "", "a1")},
			states:   states(ago(Succeeded, time.Minute), "a1"),
			want:     want{phase: PhaseProgressing, toUpdate: []string{"c1"}, current: ref(1, "")},
		},
		{
			name:     "no groups is Complete and a mandatory group cannot be checked yet",
			strategy: progS(num(1), byName("canary")),
			groups:   nil,
			states:   states(ago(Succeeded, time.Minute), "old"),
			want:     want{phase: PhaseComplete, removed: []string{"old"}, msg: []string{"complete: no clusters selected"}},
		},
	})
}

func TestDeadlines(t *testing.T) {
	run(t, []tcase{
		{
			name:     "the deprecated timeout is honoured when progressDeadline is empty",
			strategy: groupS(nil, timeout("10m"), maxFail(num(1))),
			groups:   []Group{grp(0, "", "a1", "a2")},
			states:   merge(states(ago(Progressing, 10*time.Minute), "a1"), states(ago(Progressing, 5*time.Minute), "a2")),
			want:     want{phase: PhaseProgressing, timedOut: []string{"a1"}, recheck: 5 * time.Minute},
		},
		{
			name:     "progressDeadline wins over timeout",
			strategy: groupS(nil, deadline("None"), timeout("1s")),
			groups:   []Group{grp(0, "", "a1")},
			states:   states(ago(Progressing, time.Hour), "a1"),
			want:     want{phase: PhaseProgressing},
		},
		{
			name:     "None never times out and sets no RecheckAfter",
			strategy: allS(deadline("None")),
			groups:   []Group{grp(0, "", "a1")},
			states:   states(ago(Progressing, 1000*time.Hour), "a1"),
			want:     want{phase: PhaseProgressing, msg: []string{"1 progressing"}},
		},
		{
			name:     "a 0s deadline has always expired",
			strategy: allS(deadline("0s"), maxFail(num(1))),
			groups:   []Group{grp(0, "", "a1")},
			states:   states(ago(Progressing, 0), "a1"),
			want:     want{phase: PhaseProgressing, timedOut: []string{"a1"}},
		},
		{
			name:     "a compound duration is accepted",
			strategy: allS(deadline("1h30m")),
			groups:   []Group{grp(0, "", "a1")},
			states:   states(ago(Progressing, time.Hour), "a1"),
			want:     want{phase: PhaseProgressing, recheck: 30 * time.Minute},
		},
		{
			name:     "a LastTransitionTime in the future (clock skew) extends the deadline",
			strategy: allS(deadline("10m")),
			groups:   []Group{grp(0, "", "a1")},
			states:   states(ago(Progressing, -time.Minute), "a1"),
			want:     want{phase: PhaseProgressing, recheck: 11 * time.Minute},
		},
		{
			name:     "a recorded TimeOut is a failure but not reported again",
			strategy: allS(maxFail(num(1))),
			groups:   []Group{grp(0, "", "a1", "a2")},
			states:   merge(states(ago(TimeOut, time.Minute), "a1"), states(ago(Succeeded, time.Minute), "a2")),
			want:     want{phase: PhaseProgressing, msg: []string{"1 failed or timed out within maxFailures (a1)"}},
		},
		{
			name: "only the member selected by type is read",
			strategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All,
				Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: str("150%")}},
			groups: []Group{grp(0, "", "a1")},
			want:   want{phase: PhaseProgressing, toUpdate: []string{"a1"}},
		},
	})
}

func TestCounts(t *testing.T) {
	got, err := Evaluate(Input{
		Strategy: progS(num(1), nil, deadline("10m"), soak(5*time.Minute), maxFail(num(10))),
		Groups:   []Group{grp(0, "", "a", "b", "c", "d", "e", "f", "g", "h")},
		States: map[string]ClusterState{
			"b": ago(Progressing, time.Minute), "c": ago(Progressing, time.Hour), "d": ago(Succeeded, time.Minute),
			"e": ago(Succeeded, time.Hour), "f": ago(Failed, time.Minute), "g": ago(TimeOut, time.Minute), "h": ago(Skip, 0),
		},
		Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Total: 8, ToApply: 1, Progressing: 1, Soaking: 1, Succeeded: 1, Failed: 1, TimedOut: 2, Skipped: 1}
	if got.Counts != want {
		t.Errorf("Counts = %+v, want %+v", got.Counts, want)
	}
	wantMsg := "progressing: 1 of 8 clusters succeeded, 1 skipped, 1 progressing, 1 within minSuccessTime, 1 to apply (0 now), 3 failed or timed out within maxFailures (c, f, g)"
	if got.Message != wantMsg {
		t.Errorf("Message = %q\nwant      %q", got.Message, wantMsg)
	}
}

func TestMessageElidesLongLists(t *testing.T) {
	var names []string
	for i := 0; i < 12; i++ {
		names = append(names, string(rune('a'+i)))
	}
	got, err := Evaluate(Input{Strategy: allS(), Groups: []Group{grp(0, "", names...)}, States: states(ago(Failed, time.Minute), names...), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Message, "(a, b, c, d, e, f, g, h, i, j and 2 more)") {
		t.Errorf("Message = %q", got.Message)
	}
	if len(got.Breach.Failures) != 12 {
		t.Errorf("Breach.Failures = %v, want all 12", got.Breach.Failures)
	}
}

func TestDeterministic(t *testing.T) {
	in := Input{
		Strategy: progS(num(4), byName("canary"), soak(time.Minute), deadline("5m"), maxFail(str("50%"))),
		Groups:   []Group{grp(3, "", "z", "y", "x", "w"), grp(0, "canary", "c"), grp(1, "", "q", "p", "o")},
		States: merge(states(ago(Succeeded, time.Hour), "c"), states(ago(Progressing, 6*time.Minute), "p", "o"),
			states(ago(Failed, time.Minute), "gone", "y")),
		Now: now,
	}
	first, err := Evaluate(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"q", "w", "x", "z"}; !reflect.DeepEqual(first.ToUpdate, want) {
		t.Errorf("ToUpdate = %v, want %v", first.ToUpdate, want)
	}
	if want := []string{"o", "p"}; !reflect.DeepEqual(first.TimedOut, want) {
		t.Errorf("TimedOut = %v, want %v", first.TimedOut, want)
	}
	for i := 0; i < 50; i++ {
		again, err := Evaluate(in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("evaluation %d differs:\n%+v\n%+v", i, first, again)
		}
	}
}

func TestEvaluateDoesNotModifyInput(t *testing.T) {
	groups := []Group{grp(1, "", "b", "a"), grp(0, "", "d", "c")}
	st := states(ago(Progressing, time.Hour), "a")
	_, err := Evaluate(Input{Strategy: groupS(nil, deadline("1m")), Groups: groups, States: st, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(groups, []Group{grp(1, "", "b", "a"), grp(0, "", "d", "c")}) {
		t.Errorf("groups modified: %v", groups)
	}
	if len(st) != 1 || st["a"].Status != Progressing {
		t.Errorf("states modified: %v", st)
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{ToApply: "ToApply", Progressing: "Progressing", Succeeded: "Succeeded",
		Failed: "Failed", TimeOut: "TimeOut", Skip: "Skip", Status(42): "Status(42)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

func TestInvalidInput(t *testing.T) {
	cases := []struct {
		name     string
		strategy clusterv1alpha1.RolloutStrategy
		states   map[string]ClusterState
		want     string
	}{
		{"unknown type", clusterv1alpha1.RolloutStrategy{Type: "Canary"},
			nil, `rolloutStrategy.type: unknown rollout type "Canary" (want All, Progressive or ProgressivePerGroup)`},
		{"maxConcurrency over 100%", progS(str("150%"), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: "150%" is not a percentage between 0 and 100`},
		{"maxConcurrency negative percentage", progS(str("-5%"), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: "-5%" is not a percentage between 0 and 100`},
		{"maxConcurrency fractional percentage", progS(str("12.5%"), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: "12.5%" is not a percentage between 0 and 100`},
		{"maxConcurrency bare percent sign", progS(str("%"), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: "%" is not a percentage between 0 and 100`},
		{"maxConcurrency negative", progS(num(-1), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: -1 must not be negative`},
		{"maxConcurrency words", progS(str("lots"), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: "lots" is neither a count nor a percentage such as "25%"`},
		{"maxConcurrency signed string", progS(str("+3"), nil),
			nil, `rolloutStrategy.progressive.maxConcurrency: "+3" is neither a count nor a percentage such as "25%"`},
		{"maxFailures negative on All", allS(maxFail(num(-2))),
			nil, `rolloutStrategy.all.maxFailures: -2 must not be negative`},
		{"maxFailures bad percentage on ProgressivePerGroup", groupS(nil, maxFail(str("x%"))),
			nil, `rolloutStrategy.progressivePerGroup.maxFailures: "x%" is not a percentage between 0 and 100`},
		{"maxFailures 101% on Progressive", progS(num(1), nil, maxFail(str("101%"))),
			nil, `rolloutStrategy.progressive.maxFailures: "101%" is not a percentage between 0 and 100`},
		{"progressDeadline unparsable", allS(deadline("10 minutes")),
			nil, `rolloutStrategy.all.progressDeadline: "10 minutes" is neither a duration (such as 90s, 10m or 2h) nor "None"`},
		{"progressDeadline lower-case none", allS(deadline("none")),
			nil, `rolloutStrategy.all.progressDeadline: "none" is neither a duration (such as 90s, 10m or 2h) nor "None"`},
		{"progressDeadline negative", groupS(nil, deadline("-5m")),
			nil, `rolloutStrategy.progressivePerGroup.progressDeadline: "-5m" must not be negative`},
		{"deprecated timeout unparsable", progS(num(1), nil, timeout("soon")),
			nil, `rolloutStrategy.progressive.timeout: "soon" is neither a duration (such as 90s, 10m or 2h) nor "None"`},
		{"minSuccessTime negative", progS(num(1), nil, soak(-time.Minute)),
			nil, `rolloutStrategy.progressive.minSuccessTime: -1m0s must not be negative`},
		{"mandatory group name matching nothing", progS(num(1), byName("canary", "prod-canary-east")),
			nil, `rolloutStrategy.progressive.mandatoryDecisionGroups[1].groupName: no decision group is named "prod-canary-east"`},
		{"mandatory group index matching nothing", groupS(byIndex(7)),
			nil, `rolloutStrategy.progressivePerGroup.mandatoryDecisionGroups[0].groupIndex: no decision group has index 7`},
		{"mandatory group index negative", groupS(byIndex(-1)),
			nil, `rolloutStrategy.progressivePerGroup.mandatoryDecisionGroups[0].groupIndex: -1 must not be negative`},
		{"unknown cluster status", allS(),
			map[string]ClusterState{"c1": {Status: Status(9)}}, `states["c1"].status: unknown status 9`},
		// Read as now, a zero time would hold the cluster in flight forever: its deadline
		// restarting at every evaluation, or its soak.
		{"Progressing without the time it was admitted", allS(deadline("10m")),
			map[string]ClusterState{"c1": {Status: Progressing}}, `states["c1"].lastTransitionTime: must be set for a Progressing cluster (when it was admitted to the rollout)`},
		{"Succeeded without the time it succeeded", allS(soak(time.Minute)),
			map[string]ClusterState{"a1": ago(Progressing, time.Minute), "c1": {Status: Succeeded}}, `states["c1"].lastTransitionTime: must be set for a Succeeded cluster (when it succeeded)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Evaluate(Input{Strategy: tc.strategy, Groups: fleet, States: tc.states, Now: now})
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q\nwant    %q", err.Error(), tc.want)
			}
		})
	}
}

// TestRolloutTypeAlias: rolloutType, the name OCM's documentation uses, is read when type is
// All (its default) or unset, and never overrides another written type.
func TestRolloutTypeAlias(t *testing.T) {
	groups := []Group{{Index: 0, Clusters: []string{"a", "b", "c"}}}
	one := intstr.FromInt32(1)
	for _, c := range []struct {
		name      string
		strategy  clusterv1alpha1.RolloutStrategy
		toUpdate  int
		wantPhase Phase
	}{
		{"rolloutType alone", clusterv1alpha1.RolloutStrategy{RolloutType: clusterv1alpha1.Progressive,
			Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: one}}, 1, PhaseProgressing},
		{"rolloutType over the defaulted All", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All, RolloutType: clusterv1alpha1.Progressive,
			Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: one}}, 1, PhaseProgressing},
		{"an explicit other type wins", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.ProgressivePerGroup, RolloutType: clusterv1alpha1.All}, 3, PhaseProgressing},
		{"rolloutType All is All", clusterv1alpha1.RolloutStrategy{RolloutType: clusterv1alpha1.All}, 3, PhaseProgressing},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Evaluate(Input{Strategy: c.strategy, Groups: groups, Now: time.Unix(0, 0)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.ToUpdate) != c.toUpdate || res.Phase != c.wantPhase {
				t.Fatalf("ToUpdate %v, phase %s; want %d clusters, %s", res.ToUpdate, res.Phase, c.toUpdate, c.wantPhase)
			}
		})
	}
}

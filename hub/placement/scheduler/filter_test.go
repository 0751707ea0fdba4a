package scheduler

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

const kubeVersionClaim = "kubeversion.open-cluster-management.io"

func predicateFleet() SnapshotInput {
	return globalFleet(
		mc("c1", withLabels("env", "prod", "version", "1.15.0"), claims("platform.open-cluster-management.io", "aws", kubeVersionClaim, "1.30.2")),
		mc("c2", withLabels("env", "dev", "version", "1.13.0"), claims("platform.open-cluster-management.io", "gcp", kubeVersionClaim, "1.31.0")),
		mc("c3", withLabels("env", "prod", "version", "1.14.0"), claims("platform.open-cluster-management.io", "aws")),
		mc("c4", claims("platform.open-cluster-management.io", "azure")), // no labels at all
	)
}

func TestPredicates(t *testing.T) {
	const platform = "platform.open-cluster-management.io"
	noMatch := expect{reason: clusterv1beta1.PlacementReasonNoManagedClusterMatched}
	cases := []struct {
		name  string
		preds []clusterv1beta1.ClusterSelector
		want  expect
	}{
		{name: "none: every candidate", want: scheduled("c1", "c2", "c3", "c4")},
		{name: "empty selector: every candidate", preds: []clusterv1beta1.ClusterSelector{{}},
			want: scheduled("c1", "c2", "c3", "c4")},
		{name: "labelSelector matchLabels", preds: []clusterv1beta1.ClusterSelector{{LabelSelector: matchLabels("env", "prod")}},
			want: scheduled("c1", "c3")},
		{name: "labelSelector matchExpressions", preds: []clusterv1beta1.ClusterSelector{{LabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "version", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"1.15.0"}}}}}},
			want: scheduled("c2", "c3", "c4")},
		{name: "claimSelector", preds: []clusterv1beta1.ClusterSelector{{ClaimSelector: claimIn(platform, "aws")}},
			want: scheduled("c1", "c3")},
		{name: "claimSelector Exists", preds: []clusterv1beta1.ClusterSelector{{ClaimSelector: clusterv1beta1.ClusterClaimSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: kubeVersionClaim, Operator: metav1.LabelSelectorOpExists}}}}},
			want: scheduled("c1", "c2")},
		{name: "label and claim ANDed", preds: []clusterv1beta1.ClusterSelector{{LabelSelector: matchLabels("env", "prod"), ClaimSelector: claimIn(platform, "aws", "gcp")}},
			want: scheduled("c1", "c3")},
		{name: "label and claim ANDed, none", preds: []clusterv1beta1.ClusterSelector{{LabelSelector: matchLabels("env", "dev"), ClaimSelector: claimIn(platform, "aws")}},
			want: noMatch},
		{name: "CEL regex on a label", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`managedCluster.metadata.labels["version"].matches('^1\\.1[45]\\.\\d+$')`)}},
			want: scheduled("c1", "c3")},
		{name: "CEL semver", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`semver(managedCluster.metadata.labels["version"]).isGreaterThan(semver("1.14.0"))`)}},
			want: scheduled("c1")},
		{name: "CEL on claims", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(
			`managedCluster.status.clusterClaims.exists(c, c.name == "kubeversion.open-cluster-management.io" && c.value.matches('^1\\.(30|31)\\.\\d+$'))`)}},
			want: scheduled("c1", "c2")},
		{name: "CEL on the name", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`managedCluster.metadata.name in ["c2", "c4"]`)}},
			want: scheduled("c2", "c4")},
		{name: "CEL expressions ANDed", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(
			`managedCluster.status.clusterClaims.exists(c, c.name == "platform.open-cluster-management.io" && c.value == "aws")`,
			`managedCluster.metadata.labels["version"] != "1.15.0"`)}},
			want: scheduled("c3")},
		{name: "CEL ANDed with labels and claims", preds: []clusterv1beta1.ClusterSelector{{LabelSelector: matchLabels("env", "prod"),
			ClaimSelector: claimIn(platform, "aws"), CelSelector: celExprs(`managedCluster.metadata.labels["version"] == "1.14.0"`)}},
			want: scheduled("c3")},
		{name: "CEL false everywhere", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`false`)}},
			want: noMatch},
		{name: "CEL dyn result that is not a bool selects nothing", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`managedCluster.metadata.name`)}},
			want: noMatch},
		{name: "predicates ORed", preds: []clusterv1beta1.ClusterSelector{
			{LabelSelector: matchLabels("env", "dev")},
			{ClaimSelector: claimIn(platform, "azure")}},
			want: scheduled("c2", "c4")},
		{name: "predicates ORed, overlapping", preds: []clusterv1beta1.ClusterSelector{
			{LabelSelector: matchLabels("env", "prod")},
			{ClaimSelector: claimIn(platform, "aws")}},
			want: scheduled("c1", "c3")},
		// c4 has no labels: the first predicate's expression fails on it ("no such key"), which
		// must not keep the second predicate from selecting it (OCM treats a failed evaluation
		// as that selector not matching).
		{name: "CEL evaluation error on one predicate does not veto the others", preds: []clusterv1beta1.ClusterSelector{
			{CelSelector: celExprs(`managedCluster.metadata.labels["version"] == "1.13.0"`)},
			{ClaimSelector: claimIn(platform, "azure")}},
			want: scheduled("c2", "c4")},
		{name: "CEL compile error", preds: []clusterv1beta1.ClusterSelector{
			{LabelSelector: matchLabels("env", "prod")},
			{CelSelector: celExprs(`true`, `managedCluster.metadata.labels[`)}},
			want: expect{misconfigured: "spec.predicates[1].requiredClusterSelector.celSelector.celExpressions[1]"}},
		{name: "CEL unknown function", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`managedCluster.nope()`)}},
			want: expect{misconfigured: "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]"}},
		{name: "CEL not a boolean", preds: []clusterv1beta1.ClusterSelector{{CelSelector: celExprs(`1 + 2`)}},
			want: expect{misconfigured: "must be a boolean"}},
		{name: "bad label selector", preds: []clusterv1beta1.ClusterSelector{{LabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}}},
			want: expect{misconfigured: "spec.predicates[0].requiredClusterSelector.labelSelector"}},
		{name: "bad claim selector", preds: []clusterv1beta1.ClusterSelector{{ClaimSelector: clusterv1beta1.ClusterClaimSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: platform, Operator: metav1.LabelSelectorOpIn}}}}},
			want: expect{misconfigured: "spec.predicates[0].requiredClusterSelector.claimSelector"}},
	}
	sch := newTestScheduler(nil) // shared: exercises the CEL cache across cases
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := schedule(t, sch, predicateFleet(), placement(predicates(tc.preds...)))
			tc.want.check(t, res)
			if tc.want.misconfigured != "" {
				return
			}
			if len(res.Filters) != 2 || res.Filters[0].Name != StagePredicate || res.Filters[1].Name != "Predicate,TaintToleration" {
				t.Fatalf("Filters = %+v", res.Filters)
			}
			if got := res.Filters[0].Clusters; len(got)+len(tc.want.decisions) > 0 && !reflect.DeepEqual(got, tc.want.decisions) {
				t.Errorf("Predicate stage = %v, want %v", got, tc.want.decisions)
			}
		})
	}
}

func TestTaintsAndTolerations(t *testing.T) {
	added := t0.Add(-100 * time.Second)
	fleet := func(extra ...*clusterv1.ManagedCluster) SnapshotInput {
		return globalFleet(append([]*clusterv1.ManagedCluster{mc("fine")}, extra...)...)
	}
	gpu := mc("gpu", taint("gpu", "true", clusterv1.TaintEffectNoSelect, added))
	unreachable := mc("unreachable", taint(clusterv1.ManagedClusterTaintUnreachable, "", clusterv1.TaintEffectNoSelect, added))
	ifNew := mc("ifnew", taint("maintenance", "", clusterv1.TaintEffectNoSelectIfNew, added))
	soon := mc("soon", taint("flaky", "", clusterv1.TaintEffectNoSelect, t0.Add(-250*time.Second)))
	cases := []struct {
		name    string
		in      SnapshotInput
		p       *clusterv1beta1.Placement
		want    expect
		requeue time.Duration
	}{
		{name: "NoSelect filtered without toleration", in: fleet(gpu), p: placement(),
			want: scheduled("fine")},
		{name: "NoSelect evicts a selected cluster", in: withDecisions(fleet(gpu), testKey, "gpu", "fine"), p: placement(),
			want: scheduled("fine")},
		{name: "Equal toleration", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpEqual, Value: "true"})),
			want: scheduled("fine", "gpu")},
		{name: "operator defaults to Equal", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Value: "true"})),
			want: scheduled("fine", "gpu")},
		{name: "Equal toleration with another value", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpEqual, Value: "false"})),
			want: scheduled("fine")},
		{name: "Equal toleration of an empty value", in: fleet(unreachable),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: clusterv1.ManagedClusterTaintUnreachable, Operator: clusterv1beta1.TolerationOpEqual})),
			want: scheduled("fine", "unreachable")},
		{name: "Exists toleration", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("fine", "gpu")},
		{name: "Exists toleration of another key", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "cpu", Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("fine")},
		{name: "Exists without key tolerates everything", in: fleet(gpu, unreachable, ifNew),
			p:    placement(tolerations(clusterv1beta1.Toleration{Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("fine", "gpu", "ifnew", "unreachable")},
		{name: "toleration effect must match", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, Effect: clusterv1.TaintEffectPreferNoSelect})),
			want: scheduled("fine")},
		{name: "toleration effect matching", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, Effect: clusterv1.TaintEffectNoSelect})),
			want: scheduled("fine", "gpu")},
		{name: "every taint must be tolerated", in: fleet(mc("two", taint("gpu", "true", clusterv1.TaintEffectNoSelect, added), taint("zone", "x", clusterv1.TaintEffectNoSelect, added))),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("fine")},
		{name: "NoSelectIfNew not selected now: filtered", in: fleet(ifNew), p: placement(),
			want: scheduled("fine")},
		{name: "NoSelectIfNew selected now: kept", in: withDecisions(fleet(ifNew), testKey, "ifnew"), p: placement(),
			want: scheduled("fine", "ifnew")},
		{name: "NoSelectIfNew selected by another placement only: filtered", in: withDecisions(fleet(ifNew), "ns/other", "ifnew"), p: placement(),
			want: scheduled("fine")},
		{name: "NoSelectIfNew tolerated", in: fleet(ifNew),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "maintenance", Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("fine", "ifnew")},
		{name: "tolerationSeconds running: tolerated, requeued for the rest", in: fleet(gpu),
			p:       placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](300)})),
			want:    scheduled("fine", "gpu"),
			requeue: 200 * time.Second},
		{name: "tolerationSeconds: the earliest expiry wins", in: fleet(gpu, soon),
			p: placement(tolerations(
				clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](300)},
				clusterv1beta1.Toleration{Key: "flaky", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](300)})),
			want:    scheduled("fine", "gpu", "soon"),
			requeue: 50 * time.Second},
		{name: "tolerationSeconds expired: dropped", in: fleet(gpu),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](60)})),
			want: scheduled("fine")},
		{name: "tolerationSeconds expired for a selected cluster: evicted", in: withDecisions(fleet(gpu), testKey, "gpu"),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](60)})),
			want: scheduled("fine")},
		{name: "tolerationSeconds: the clock past the expiry drops the cluster", in: atTime(fleet(gpu), t0.Add(200*time.Second)),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](300)})),
			want: scheduled("fine")},
		{name: "tolerationSeconds: exactly at the expiry", in: atTime(fleet(gpu), added.Add(300*time.Second)),
			p:    placement(tolerations(clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](300)})),
			want: scheduled("fine")},
		{name: "tolerationSeconds with a later toleration forever", in: fleet(gpu),
			p: placement(tolerations(
				clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](60)},
				clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("fine", "gpu")},
		{name: "no requeue once every timed toleration ran out", in: fleet(gpu, soon),
			p: placement(tolerations(
				clusterv1beta1.Toleration{Key: "gpu", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](10)},
				clusterv1beta1.Toleration{Key: "flaky", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](10)})),
			want: scheduled("fine")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := schedule(t, newTestScheduler(nil), tc.in, tc.p)
			tc.want.check(t, res)
			if res.RequeueAfter != tc.requeue {
				t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, tc.requeue)
			}
			if got := res.Filters[1].Clusters; !reflect.DeepEqual(got, tc.want.decisions) {
				t.Errorf("TaintToleration stage = %v, want %v", got, tc.want.decisions)
			}
		})
	}
}

func TestPreferNoSelect(t *testing.T) {
	// "pref" is selected now, so Steady ranks it first; its untolerated PreferNoSelect taint
	// puts it last anyway.
	in := withDecisions(globalFleet(
		mc("pref", taint("spot", "", clusterv1.TaintEffectPreferNoSelect, t0)),
		mc("n1"), mc("n2"),
	), testKey, "pref")
	cases := []struct {
		name string
		p    *clusterv1beta1.Placement
		want expect
	}{
		{name: "others suffice", p: placement(numberOf(2)), want: scheduled("n1", "n2")},
		{name: "others do not suffice", p: placement(numberOf(3)), want: scheduled("n1", "n2", "pref")},
		{name: "every feasible cluster", p: placement(), want: scheduled("n1", "n2", "pref")},
		{name: "tolerated: chosen by score", p: placement(numberOf(1),
			tolerations(clusterv1beta1.Toleration{Key: "spot", Operator: clusterv1beta1.TolerationOpExists})),
			want: scheduled("pref")},
		{name: "toleration expired", p: placement(numberOf(1),
			tolerations(clusterv1beta1.Toleration{Key: "spot", Operator: clusterv1beta1.TolerationOpExists, TolerationSeconds: ptr[int64](0)})),
			want: scheduled("n1")},
		{name: "too few even with it", p: placement(numberOf(4)), want: expect{reason: clusterv1beta1.PlacementReasonNotAllDecisionsScheduled,
			message: "1 cluster decisions unscheduled", decisions: []string{"n1", "n2", "pref"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := schedule(t, newTestScheduler(nil), in, tc.p)
			tc.want.check(t, res)
			if got := res.Filters[1].Clusters; !reflect.DeepEqual(got, []string{"n1", "n2", "pref"}) {
				t.Errorf("PreferNoSelect clusters must stay feasible, TaintToleration stage = %v", got)
			}
		})
	}
}

func TestTolerationMatches(t *testing.T) {
	taint := clusterv1.Taint{Key: "k", Value: "v", Effect: clusterv1.TaintEffectNoSelect}
	cases := []struct {
		tol  clusterv1beta1.Toleration
		want bool
	}{
		{clusterv1beta1.Toleration{Key: "k", Value: "v"}, true},
		{clusterv1beta1.Toleration{Key: "k", Value: "v", Operator: clusterv1beta1.TolerationOpEqual}, true},
		{clusterv1beta1.Toleration{Key: "k", Value: "w", Operator: clusterv1beta1.TolerationOpEqual}, false},
		{clusterv1beta1.Toleration{Key: "k", Operator: clusterv1beta1.TolerationOpEqual}, false},
		{clusterv1beta1.Toleration{Key: "k", Operator: clusterv1beta1.TolerationOpExists}, true},
		{clusterv1beta1.Toleration{Operator: clusterv1beta1.TolerationOpExists}, true},
		{clusterv1beta1.Toleration{Operator: clusterv1beta1.TolerationOpExists, Effect: clusterv1.TaintEffectNoSelectIfNew}, false},
		{clusterv1beta1.Toleration{Key: "j", Operator: clusterv1beta1.TolerationOpExists}, false},
		{clusterv1beta1.Toleration{Key: "k", Value: "v", Operator: "Bogus"}, false},
		{clusterv1beta1.Toleration{Value: "v"}, false}, // Equal needs the key
	}
	for _, tc := range cases {
		if got := tolerationMatches(tc.tol, taint); got != tc.want {
			t.Errorf("tolerationMatches(%+v) = %v, want %v", tc.tol, got, tc.want)
		}
	}
}

func withDecisions(in SnapshotInput, key string, clusters ...string) SnapshotInput {
	d := map[string][]string{}
	for k, v := range in.Decisions {
		d[k] = v
	}
	d[key] = append(d[key], clusters...)
	in.Decisions = d
	return in
}

func atTime(in SnapshotInput, now time.Time) SnapshotInput {
	in.Now = now
	return in
}

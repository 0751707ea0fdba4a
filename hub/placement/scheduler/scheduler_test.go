package scheduler

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

func TestSelection(t *testing.T) {
	exact := mode(clusterv1beta1.PrioritizerPolicyModeExact)
	fleet := globalFleet(mc("d"), mc("a"), mc("c"), mc("b"))
	byScore := map[string]int64{"a": 10, "b": 90, "c": 50, "d": 50}
	notAll := clusterv1beta1.PlacementReasonNotAllDecisionsScheduled
	cases := []struct {
		name   string
		in     SnapshotInput
		p      *clusterv1beta1.Placement
		want   expect
		scores []int64 // of the decisions, in order
	}{
		{name: "ties go by name", in: fleet, p: placement(exact, numberOf(2)), want: scheduled("a", "b")},
		{name: "ties keep what is selected now", in: withDecisions(fleet, testKey, "d", "c"), p: placement(exact, numberOf(2)),
			want: scheduled("c", "d")},
		{name: "ties keep what is selected now, then go by name", in: withDecisions(fleet, testKey, "d"), p: placement(exact, numberOf(2)),
			want: scheduled("a", "d")},
		{name: "another placement's decisions do not break ties", in: withDecisions(fleet, "ns/other", "d", "c"), p: placement(exact, numberOf(2)),
			want: scheduled("a", "b")},
		{name: "Steady keeps the current decisions", in: withDecisions(fleet, testKey, "c", "d"), p: placement(numberOf(2)),
			want: scheduled("c", "d")},
		{name: "Balance moves off busy clusters", in: withDecisions(withDecisions(fleet, "ns/x", "a", "b"), "ns/y", "a"), p: placement(numberOf(2)),
			want: scheduled("c", "d")},
		{name: "highest scores first, ties by name", in: fleet, p: placement(exact, numberOf(2), prioritizer(builtIn("Fixed"), 1)),
			want: scheduled("b", "c"), scores: []int64{90, 50}},
		{name: "too few feasible clusters", in: fleet, p: placement(numberOf(6)),
			want: expect{reason: notAll, message: "2 cluster decisions unscheduled", decisions: []string{"a", "b", "c", "d"}}},
		{name: "numberOfClusters 0", in: fleet, p: placement(numberOf(0)), want: scheduled()},
		{name: "numberOfClusters 0 without feasible clusters", in: fleet, p: placement(numberOf(0),
			predicates(clusterv1beta1.ClusterSelector{LabelSelector: matchLabels("nope", "x")})), want: scheduled()},
		{name: "numberOfClusters unset: every feasible cluster", in: fleet, p: placement(), want: scheduled("a", "b", "c", "d")},
		{name: "no feasible cluster", in: fleet, p: placement(numberOf(1), predicates(clusterv1beta1.ClusterSelector{LabelSelector: matchLabels("nope", "x")})),
			want: expect{reason: clusterv1beta1.PlacementReasonNoManagedClusterMatched}},
		{name: "negative numberOfClusters", in: fleet, p: placement(numberOf(-1)),
			want: expect{misconfigured: "spec.numberOfClusters"}},
		{name: "sortBy ClusterName", in: fleet, p: placement(exact, prioritizer(builtIn("Fixed"), 1), sortBy(clusterv1beta1.PlacementSortByClusterName)),
			want: scheduled("a", "b", "c", "d"), scores: []int64{10, 90, 50, 50}},
		{name: "sortBy Score, ties by name", in: fleet, p: placement(exact, prioritizer(builtIn("Fixed"), 1), sortBy(clusterv1beta1.PlacementSortByScore)),
			want: scheduled("b", "c", "d", "a"), scores: []int64{90, 50, 50, 10}},
		{name: "sortBy Score with weights", in: fleet, p: placement(exact, prioritizer(builtIn("Fixed"), -3), sortBy(clusterv1beta1.PlacementSortByScore)),
			want: scheduled("a", "c", "d", "b"), scores: []int64{-30, -150, -150, -270}},
		{name: "sortBy unknown", in: fleet, p: placement(sortBy("Random")),
			want: expect{misconfigured: `spec.sortBy "Random" is not ClusterName or Score`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sch := newTestScheduler(map[string]Prioritizer{"Fixed": fixedScores(byScore)})
			res := schedule(t, sch, tc.in, tc.p)
			tc.want.check(t, res)
			if tc.scores == nil {
				return
			}
			var got []int64
			for _, g := range res.Groups {
				for _, d := range g.Clusters {
					got = append(got, d.Score)
				}
			}
			if !reflect.DeepEqual(got, tc.scores) {
				t.Errorf("decision scores = %v, want %v", got, tc.scores)
			}
		})
	}
}

func TestSpreadPolicy(t *testing.T) {
	// Scores order the clusters a1 > a2 > a3 > n1 > b1 > c1. Zones (label): a1-a3 in a, b1 in
	// b, c1 in c, n1 none. Regions (claim): a1, a2, b1 east; a3, c1 west; n1 none.
	const region = "region.open-cluster-management.io"
	in := globalFleet(
		mc("a1", withLabels("zone", "a"), claims(region, "east")),
		mc("a2", withLabels("zone", "a"), claims(region, "east")),
		mc("a3", withLabels("zone", "a"), claims(region, "west")),
		mc("b1", withLabels("zone", "b"), claims(region, "east")),
		mc("c1", withLabels("zone", "c"), claims(region, "west")),
		mc("n1"),
	)
	fixed := fixedScores(map[string]int64{"a1": 100, "a2": 90, "a3": 80, "n1": 50, "b1": 10, "c1": 5})
	zone := func(skew int32, when clusterv1beta1.UnsatisfiableMaxSkewAction) clusterv1beta1.SpreadConstraintsTerm {
		return clusterv1beta1.SpreadConstraintsTerm{TopologyKey: "zone", TopologyKeyType: clusterv1beta1.TopologyKeyTypeLabel, MaxSkew: skew, WhenUnsatisfiable: when}
	}
	regionTerm := func(skew int32, when clusterv1beta1.UnsatisfiableMaxSkewAction) clusterv1beta1.SpreadConstraintsTerm {
		return clusterv1beta1.SpreadConstraintsTerm{TopologyKey: region, TopologyKeyType: clusterv1beta1.TopologyKeyTypeClaim, MaxSkew: skew, WhenUnsatisfiable: when}
	}
	notAll := func(unscheduled string, decisions ...string) expect {
		return expect{reason: clusterv1beta1.PlacementReasonNotAllDecisionsScheduled, message: unscheduled + " cluster decisions unscheduled", decisions: decisions}
	}
	cases := []struct {
		name string
		n    int32
		by   []clusterv1beta1.SpreadConstraintsTerm
		want expect
	}{
		{name: "no spread: by score", n: 3, want: scheduled("a1", "a2", "a3")},
		{name: "label, DoNotSchedule, maxSkew 1", n: 3, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.DoNotSchedule)},
			want: scheduled("a1", "b1", "c1")},
		{name: "label, DoNotSchedule, maxSkew 1, more than the skew allows", n: 5, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.DoNotSchedule)},
			want: notAll("1", "a1", "a2", "b1", "c1")},
		{name: "label, DoNotSchedule, maxSkew 2", n: 3, by: []clusterv1beta1.SpreadConstraintsTerm{zone(2, clusterv1beta1.DoNotSchedule)},
			want: scheduled("a1", "a2", "b1")},
		{name: "label, DoNotSchedule: clusters without the key are never chosen", by: []clusterv1beta1.SpreadConstraintsTerm{zone(3, clusterv1beta1.DoNotSchedule)},
			want: scheduled("a1", "a2", "a3", "b1", "c1")},
		{name: "label, ScheduleAnyway, maxSkew 1", n: 3, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.ScheduleAnyway)},
			want: scheduled("a1", "b1", "c1")},
		{name: "label, ScheduleAnyway, beyond the skew", n: 5, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.ScheduleAnyway)},
			want: scheduled("a1", "a2", "a3", "b1", "c1")},
		{name: "label, ScheduleAnyway, clusters without the key last", n: 6, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.ScheduleAnyway)},
			want: scheduled("a1", "a2", "a3", "b1", "c1", "n1")},
		{name: "claim, DoNotSchedule, maxSkew 1", n: 4, by: []clusterv1beta1.SpreadConstraintsTerm{regionTerm(1, clusterv1beta1.DoNotSchedule)},
			want: scheduled("a1", "a2", "a3", "c1")},
		{name: "claim, DoNotSchedule, maxSkew 1, every cluster with the claim", n: 6, by: []clusterv1beta1.SpreadConstraintsTerm{regionTerm(1, clusterv1beta1.DoNotSchedule)},
			want: notAll("1", "a1", "a2", "a3", "b1", "c1")},
		{name: "claim, ScheduleAnyway", n: 5, by: []clusterv1beta1.SpreadConstraintsTerm{regionTerm(1, clusterv1beta1.ScheduleAnyway)},
			want: scheduled("a1", "a2", "a3", "b1", "c1")},
		{name: "label and claim, both DoNotSchedule", n: 3, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.DoNotSchedule), regionTerm(1, clusterv1beta1.DoNotSchedule)},
			want: scheduled("a1", "b1", "c1")},
		{name: "label DoNotSchedule, claim ScheduleAnyway", n: 4, by: []clusterv1beta1.SpreadConstraintsTerm{zone(1, clusterv1beta1.DoNotSchedule), regionTerm(1, clusterv1beta1.ScheduleAnyway)},
			want: scheduled("a1", "a3", "b1", "c1")},
		{name: "maxSkew 0 counts as 1", n: 3, by: []clusterv1beta1.SpreadConstraintsTerm{zone(0, clusterv1beta1.DoNotSchedule)},
			want: scheduled("a1", "b1", "c1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := placement(mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Fixed"), 1), spreadBy(tc.by...))
			if tc.n > 0 {
				p.Spec.NumberOfClusters = &tc.n
			}
			res := schedule(t, newTestScheduler(map[string]Prioritizer{"Fixed": fixed}), in, p)
			tc.want.check(t, res)
		})
	}
}

func TestDecisionGroups(t *testing.T) {
	exists := func(key string) clusterv1beta1.GroupClusterSelector {
		return clusterv1beta1.GroupClusterSelector{LabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}}}
	}
	strategy := func(per intstr.IntOrString, groups ...clusterv1beta1.DecisionGroup) placementOpt {
		return func(p *clusterv1beta1.Placement) {
			p.Spec.DecisionStrategy.GroupStrategy = clusterv1beta1.GroupStrategy{ClustersPerDecisionGroup: per, DecisionGroups: groups}
		}
	}
	fleetOf := func(n int, opts func(i int) []clusterOpt) SnapshotInput {
		var cs []*clusterv1.ManagedCluster
		for i := range n {
			var o []clusterOpt
			if opts != nil {
				o = opts(i)
			}
			cs = append(cs, mc(fmt.Sprintf("c%03d", i), o...))
		}
		return globalFleet(cs...)
	}
	// The seeds' example: 310 clusters, 10 labelled prod-canary-west, 10 prod-canary-east
	// (not the first ones by name), 150 per group.
	seeds := fleetOf(310, func(i int) []clusterOpt {
		switch {
		case i >= 300:
			return []clusterOpt{withLabels("prod-canary-west", "true")}
		case i >= 150 && i < 160:
			return []clusterOpt{withLabels("prod-canary-east", "true")}
		}
		return nil
	})
	canary := strategy(intstr.FromInt32(150),
		clusterv1beta1.DecisionGroup{GroupName: "prod-canary-west", ClusterSelector: exists("prod-canary-west")},
		clusterv1beta1.DecisionGroup{GroupName: "prod-canary-east", ClusterSelector: exists("prod-canary-east")})
	hundred := fleetOf(100, nil)
	ten := fleetOf(10, func(i int) []clusterOpt {
		if i%2 == 0 {
			return []clusterOpt{claims("tier.example.com", "gold")}
		}
		return nil
	})

	cases := []struct {
		name   string
		in     SnapshotInput
		p      *clusterv1beta1.Placement
		groups []string // "index:name:count"
		mis    string
	}{
		{name: "seeds: canaries, then groups of 150", in: seeds, p: placement(clusterSets("global"), canary),
			groups: []string{"0:prod-canary-west:10", "1:prod-canary-east:10", "2::150", "3::140"}},
		{name: "20% of 100", in: hundred, p: placement(strategy(intstr.FromString("20%"))),
			groups: []string{"0::20", "1::20", "2::20", "3::20", "4::20"}},
		{name: "25% of 10 rounds up", in: ten, p: placement(strategy(intstr.FromString("25%"))),
			groups: []string{"0::3", "1::3", "2::3", "3::1"}},
		{name: "100%", in: ten, p: placement(strategy(intstr.FromString("100%"))), groups: []string{"0::10"}},
		{name: "no strategy: one group 0", in: hundred, p: placement(), groups: []string{"0::100"}},
		{name: "a group size above the selection", in: ten, p: placement(strategy(intstr.FromInt32(50))), groups: []string{"0::10"}},
		{name: "a count as a string", in: ten, p: placement(strategy(intstr.FromString("4"))), groups: []string{"0::4", "1::4", "2::2"}},
		{name: "a named group split by the group size", in: ten, p: placement(strategy(intstr.FromInt32(3),
			clusterv1beta1.DecisionGroup{GroupName: "gold", ClusterSelector: clusterv1beta1.GroupClusterSelector{ClaimSelector: claimIn("tier.example.com", "gold")}})),
			groups: []string{"0:gold:3", "1:gold:2", "2::3", "3::2"}},
		{name: "a named group matching nothing has no group", in: ten, p: placement(strategy(intstr.IntOrString{},
			clusterv1beta1.DecisionGroup{GroupName: "none", ClusterSelector: exists("nope")})),
			groups: []string{"0::10"}},
		{name: "a cluster goes to the first group matching it", in: ten, p: placement(strategy(intstr.IntOrString{},
			clusterv1beta1.DecisionGroup{GroupName: "all", ClusterSelector: clusterv1beta1.GroupClusterSelector{}},
			clusterv1beta1.DecisionGroup{GroupName: "gold", ClusterSelector: clusterv1beta1.GroupClusterSelector{ClaimSelector: claimIn("tier.example.com", "gold")}})),
			groups: []string{"0:all:10"}},
		{name: "groups of the selected clusters only", in: seeds, p: placement(numberOf(5), mode(clusterv1beta1.PrioritizerPolicyModeExact), canary),
			groups: []string{"0::5"}},
		{name: "no selection: one empty group 0", in: ten, p: placement(numberOf(0), canary), groups: []string{"0::0"}},
		{name: "a percentage above 100%", in: ten, p: placement(strategy(intstr.FromString("150%"))),
			mis: "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup"},
		{name: "0%", in: ten, p: placement(strategy(intstr.FromString("0%"))), mis: "clustersPerDecisionGroup"},
		{name: "not a number", in: ten, p: placement(strategy(intstr.FromString("many"))), mis: "clustersPerDecisionGroup"},
		{name: "a negative count", in: ten, p: placement(strategy(intstr.FromInt32(-2))), mis: "clustersPerDecisionGroup"},
		{name: "a bad group selector", in: ten, p: placement(strategy(intstr.IntOrString{},
			clusterv1beta1.DecisionGroup{GroupName: "x", ClusterSelector: clusterv1beta1.GroupClusterSelector{LabelSelector: metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn}}}}})),
			mis: "spec.decisionStrategy.groupStrategy.decisionGroups[0].groupClusterSelector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := schedule(t, newTestScheduler(nil), tc.in, tc.p)
			if tc.mis != "" {
				expect{misconfigured: tc.mis}.check(t, res)
				return
			}
			if res.Misconfigured != "" {
				t.Fatalf("Misconfigured: %s", res.Misconfigured)
			}
			if got := groupSummary(res); !reflect.DeepEqual(got, tc.groups) {
				t.Errorf("groups = %v, want %v", got, tc.groups)
			}
			seen := map[string]bool{}
			for _, g := range res.Groups {
				for _, d := range g.Clusters {
					if seen[d.ClusterName] {
						t.Errorf("%s is in two groups", d.ClusterName)
					}
					seen[d.ClusterName] = true
				}
			}
			if len(seen) != res.Selected {
				t.Errorf("groups hold %d clusters, Selected = %d", len(seen), res.Selected)
			}
		})
	}

	t.Run("seeds: group members", func(t *testing.T) {
		res := schedule(t, newTestScheduler(nil), seeds, placement(clusterSets("global"), canary))
		want := func(from, to int) []string {
			var out []string
			for i := from; i < to; i++ {
				out = append(out, fmt.Sprintf("c%03d", i))
			}
			return out
		}
		var rest []string
		rest = append(rest, want(0, 150)...)
		rest = append(rest, want(160, 300)...)
		members := func(g Group) []string {
			var out []string
			for _, d := range g.Clusters {
				out = append(out, d.ClusterName)
			}
			return out
		}
		if got := members(res.Groups[0]); !reflect.DeepEqual(got, want(300, 310)) {
			t.Errorf("west = %v", got)
		}
		if got := members(res.Groups[1]); !reflect.DeepEqual(got, want(150, 160)) {
			t.Errorf("east = %v", got)
		}
		if got := append(members(res.Groups[2]), members(res.Groups[3])...); !reflect.DeepEqual(got, rest) {
			t.Errorf("the rest, in name order, = %v", got)
		}
	})

	t.Run("groups follow sortBy Score", func(t *testing.T) {
		sch := newTestScheduler(map[string]Prioritizer{"Fixed": fixedScores(map[string]int64{"c009": 9, "c008": 8, "c007": 7})})
		res := schedule(t, sch, ten, placement(mode(clusterv1beta1.PrioritizerPolicyModeExact), prioritizer(builtIn("Fixed"), 1),
			sortBy(clusterv1beta1.PlacementSortByScore), strategy(intstr.FromInt32(2))))
		if got := decided(res)[:4]; !reflect.DeepEqual(got, []string{"c009", "c008", "c007", "c000"}) {
			t.Errorf("decisions = %v", decided(res))
		}
		if got := groupSummary(res); len(got) != 5 {
			t.Errorf("groups = %v", got)
		}
	})
}

// Many placements scheduled at once against one snapshot and one scheduler (its CEL cache
// and encoder pool are shared): run with -race.
func TestConcurrentSchedules(t *testing.T) {
	in := predicateFleet()
	in.Decisions = map[string][]string{"ns/p0": {"c1"}, "ns/p1": {"c2", "c3"}}
	snap := NewSnapshot(in)
	sch := newTestScheduler(nil)
	exprs := []string{
		`managedCluster.metadata.labels["env"] == "prod"`,
		`semver(managedCluster.metadata.labels["version"]).isGreaterThan(semver("1.13.0"))`,
		`managedCluster.status.clusterClaims.exists(c, c.value == "aws")`,
	}
	want := map[string][]string{exprs[0]: {"c1", "c3"}, exprs[1]: {"c1", "c3"}, exprs[2]: {"c1", "c3"}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			expr := exprs[i%len(exprs)]
			p := placement(predicates(clusterv1beta1.ClusterSelector{CelSelector: celExprs(expr)}))
			p.Name = fmt.Sprintf("p%d", i)
			res, err := sch.Schedule(context.Background(), snap, p)
			if err != nil {
				errs <- err
				return
			}
			if got := decided(res); !reflect.DeepEqual(got, want[expr]) {
				errs <- fmt.Errorf("%s: %s decided %v, want %v", p.Name, expr, got, want[expr])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

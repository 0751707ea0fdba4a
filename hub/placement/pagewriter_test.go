package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

// layout pages a selection the way the controller does: clusters sorted by name, split into
// groups of groupSize (0: one group).
func layout(clusters []string, groupSize int) []desiredDecision {
	sorted := slices.Clone(clusters)
	sort.Strings(sorted)
	var groups []scheduler.Group
	for i := 0; i < len(sorted) || len(groups) == 0; {
		n := len(sorted) - i
		if groupSize > 0 {
			n = min(n, groupSize)
		}
		g := scheduler.Group{Index: int32(len(groups)), Name: fmt.Sprintf("g%d", len(groups))}
		for _, c := range sorted[i : i+n] {
			g.Clusters = append(g.Clusters, scheduler.Decision{ClusterName: c})
		}
		groups = append(groups, g)
		i += n
	}
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	d, _ := pages(p, groups)
	return d
}

// simulate runs the plan from before to after on in-memory pages and checks, after every
// single write, that each cluster selected both before and after is on some page; at the end
// the pages are exactly after's.
func simulate(t *testing.T, before, after []desiredDecision) int {
	t.Helper()
	state := map[string][]clusterv1beta1.ClusterDecision{}
	var existing []pageState
	kept := map[string]bool{}
	for _, d := range before {
		state[d.name] = d.decisions
		existing = append(existing, pageState{name: d.name, groupIndex: d.groupIndex, groupName: d.groupName, decisions: d.decisions})
		for _, c := range d.decisions {
			kept[c.ClusterName] = true
		}
	}
	selectedAfter := map[string]bool{}
	for _, d := range after {
		for _, c := range d.decisions {
			selectedAfter[c.ClusterName] = true
		}
	}
	for c := range kept {
		if !selectedAfter[c] {
			delete(kept, c)
		}
	}
	plan := planPageWrites("p", existing, after)
	for i, w := range plan {
		switch w.kind {
		case writeCreate:
			if _, ok := state[w.page.name]; ok {
				t.Fatalf("write %d creates page %s, which exists", i, w.page.name)
			}
			state[w.page.name] = w.page.decisions
		case writeUpdate:
			if _, ok := state[w.page.name]; !ok {
				t.Fatalf("write %d updates page %s, which does not exist", i, w.page.name)
			}
			state[w.page.name] = w.page.decisions
		case writeDelete:
			delete(state, w.page.name)
		}
		if len(w.page.decisions) > clusterv1beta1.MaxClusterDecisionsPerPlacementDecision {
			t.Fatalf("write %d puts %d clusters on page %s", i, len(w.page.decisions), w.page.name)
		}
		on := map[string]bool{}
		for _, ds := range state {
			for _, c := range ds {
				on[c.ClusterName] = true
			}
		}
		for c := range kept {
			if !on[c] {
				t.Fatalf("after write %d (%s %s) cluster %s, selected before and after, is on no page", i, w.kind, w.page.name, c)
			}
		}
	}
	if len(state) != len(after) {
		t.Fatalf("after the plan there are %d pages, want %d", len(state), len(after))
	}
	for _, d := range after {
		if !sameClusters(state[d.name], d.decisions) {
			t.Fatalf("page %s holds %v, want %v", d.name, state[d.name], d.decisions)
		}
	}
	return len(plan)
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%04d", prefix, i))
	}
	return out
}

func TestPageWriterKeepsStayingClusters(t *testing.T) {
	base := names("m", 0, 150)
	cases := []struct {
		name          string
		before, after []string
		groupSize     int
	}{
		// 50 clusters whose names sort first push the last 50 of page 1 onto page 2.
		{"grow in front", base, append(names("a", 0, 50), base...), 0},
		{"shrink in front", append(names("a", 0, 50), base...), base, 0},
		{"grow at the end", base, append(slices.Clone(base), names("z", 0, 80)...), 0},
		{"replace some, keep most", base, append(names("a", 0, 30), base[30:]...), 0},
		{"groups of 120 grow in front", base, append(names("a", 0, 60), base...), 120},
		{"groups of 50 shrink in front", append(names("a", 0, 70), base...), base[10:], 50},
		{"from one group to groups", base, base, 40},
		{"to nothing", base, nil, 0},
		{"from nothing", nil, base, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			simulate(t, layout(c.before, 0), layout(c.after, c.groupSize))
			simulate(t, layout(c.before, c.groupSize), layout(c.after, c.groupSize))
		})
	}
}

// Pages that swap clusters (each gives its last copies to the other) need a spare page.
func TestPageWriterSwap(t *testing.T) {
	a, b := names("a", 0, 100), names("b", 0, 100)
	before := layout(append(slices.Clone(a), b...), 0)
	after := before
	after = []desiredDecision{
		{name: before[0].name, decisions: before[1].decisions},
		{name: before[1].name, decisions: before[0].decisions},
	}
	simulate(t, before, after)
	spares := 0
	for _, w := range planPageWrites("p", states(before), after) {
		if w.spare && w.kind == writeCreate {
			spares++
		}
	}
	if spares == 0 {
		t.Fatal("a swap of two full pages is planned without a spare page")
	}
}

func states(ds []desiredDecision) []pageState {
	var out []pageState
	for _, d := range ds {
		out = append(out, pageState{name: d.name, groupIndex: d.groupIndex, groupName: d.groupName, decisions: d.decisions})
	}
	return out
}

// Random selections of up to 700 clusters, grouped or not, changed by random additions and
// removals: the invariant holds after every write.
func TestPageWriterRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := names("c", 0, 1000)
	pick := func() []string {
		var out []string
		p := r.Float64()
		for _, c := range all[:700] {
			if r.Float64() < p {
				out = append(out, c)
			}
		}
		return out
	}
	for i := range 300 {
		before := pick()
		after := slices.Clone(before)
		// Mostly small changes near the front (page boundaries move), sometimes a new set.
		switch i % 3 {
		case 0:
			after = append(after, all[r.IntN(1000)])
			for range r.IntN(60) {
				after = append(after, all[r.IntN(300)])
			}
		case 1:
			for range r.IntN(60) {
				if len(after) > 0 {
					j := r.IntN(len(after))
					after = append(after[:j], after[j+1:]...)
				}
			}
		default:
			after = pick()
		}
		after = slices.Compact(sortedCopy(after))
		gs := []int{0, 30, 100, 150}[r.IntN(4)]
		simulate(t, layout(before, []int{0, 30, 100, 150}[r.IntN(4)]), layout(after, gs))
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

package placement

import (
	"fmt"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
)

// A placement's decisions are spread over PlacementDecision pages of at most 100 clusters, and
// readers (the add-on manager, ManifestWorkReplicaSets, Argo CD's generator) list the pages
// at any moment, often from an informer cache that holds some prefix of our writes. A cluster
// that only moves between pages must never look gone to them, or they uninstall what it runs
// (OCM's bug open-cluster-management-io/ocm#1346). So the pages are written in an order where,
// after every single write, every cluster selected both before and after is on some page:
// a page's write goes first when what it drops is held by another page; when every remaining
// write would drop the last copy of a kept cluster (pages swapping clusters), those clusters
// are first copied to a spare page, deleted with the pages no longer wanted at the end.
// Clusters that really leave are dropped in the same pass.

// pageState is a PlacementDecision as it is: its name, decision group and clusters.
type pageState struct {
	name       string
	groupIndex int32
	groupName  string
	decisions  []clusterv1beta1.ClusterDecision
}

// writeKind is what a pageWrite does.
type writeKind int

const (
	// writeCreate creates the page with its decisions (a spare page, or one more page).
	writeCreate writeKind = iota
	// writeUpdate sets the page's group labels (when they differ) and its decisions.
	writeUpdate
	// writeDelete deletes the page.
	writeDelete
)

func (k writeKind) String() string {
	return [...]string{"create", "update", "delete"}[k]
}

// pageWrite is one write of the page writer, in the order planned.
type pageWrite struct {
	kind writeKind
	page desiredDecision
	// spare is true for a page created only to hold moving clusters during the pass.
	spare bool
}

// planPageWrites orders the writes that take the pages from existing to desired so that no
// reader ever misses a cluster in both. Pages whose clusters do not change are not written
// here (their labels and scores are the caller's business).
func planPageWrites(placement string, existing []pageState, desired []desiredDecision) []pageWrite {
	cur := map[string]map[string]bool{} // page → its clusters now
	count := map[string]int{}           // cluster → how many pages hold it now
	before := map[string]bool{}
	byName := map[string]pageState{}
	for _, e := range existing {
		byName[e.name] = e
		cur[e.name] = clusterSet(e.decisions)
		for c := range cur[e.name] {
			count[c]++
			before[c] = true
		}
	}
	after := map[string]bool{}
	wanted := map[string]bool{}
	for _, d := range desired {
		wanted[d.name] = true
		for _, cd := range d.decisions {
			after[cd.ClusterName] = true
		}
	}
	kept := func(c string) bool { return before[c] && after[c] }

	var pending []desiredDecision
	for _, d := range desired {
		e, ok := byName[d.name]
		if !ok || !sameClusters(e.decisions, d.decisions) {
			pending = append(pending, d)
		}
	}
	// lastCopies are the kept clusters a write of d would take off the pages altogether.
	lastCopies := func(d desiredDecision) []clusterv1beta1.ClusterDecision {
		next := clusterSet(d.decisions)
		var out []clusterv1beta1.ClusterDecision
		for _, e := range byName[d.name].decisions {
			if c := e.ClusterName; cur[d.name][c] && !next[c] && kept(c) && count[c] == 1 {
				out = append(out, e)
			}
		}
		return out
	}
	var plan []pageWrite
	write := func(w pageWrite) {
		plan = append(plan, w)
		for c := range cur[w.page.name] {
			count[c]--
		}
		cur[w.page.name] = clusterSet(w.page.decisions)
		for c := range cur[w.page.name] {
			count[c]++
		}
	}
	spares := 0
	for len(pending) > 0 {
		i := 0
		for i < len(pending) && len(lastCopies(pending[i])) > 0 {
			i++
		}
		if i == len(pending) {
			// Every write left would drop a last copy: park those of the first on a spare page.
			i = 0
			e := byName[pending[0].name]
			name := ""
			for name == "" || wanted[name] || cur[name] != nil {
				spares++
				name = fmt.Sprintf("%s-decision-%d", placement, len(desired)+len(existing)+spares)
			}
			write(pageWrite{kind: writeCreate, spare: true, page: desiredDecision{name: name,
				groupIndex: e.groupIndex, groupName: e.groupName, decisions: lastCopies(pending[0])}})
		}
		d := pending[i]
		kind := writeUpdate
		if cur[d.name] == nil {
			kind = writeCreate
		}
		write(pageWrite{kind: kind, page: d})
		pending = append(pending[:i], pending[i+1:]...)
	}
	// Every kept cluster is now on its wanted page: the others can go.
	for _, e := range existing {
		if !wanted[e.name] {
			plan = append(plan, pageWrite{kind: writeDelete, page: desiredDecision{name: e.name}})
		}
	}
	for _, w := range plan {
		if w.spare {
			plan = append(plan, pageWrite{kind: writeDelete, spare: true, page: desiredDecision{name: w.page.name}})
		}
	}
	return plan
}

func clusterSet(ds []clusterv1beta1.ClusterDecision) map[string]bool {
	out := make(map[string]bool, len(ds))
	for _, d := range ds {
		out[d.ClusterName] = true
	}
	return out
}

package scheduler

import (
	"strings"

	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Reads is what of a cluster a placement's decision depends on, so the controller wakes a
// placement only for the changes that can change its decision. Every placement reads, of the
// clusters of its eligible sets, their labels (set membership, label selectors, spread,
// decision groups), claims (claim selectors, spread, decision groups), taints and deletion;
// Reads says what else it reads. The other placements' decisions (Balance, Steady) are not
// cluster fields: they are read live at each pass.
type Reads struct {
	// Object: CEL predicates see the whole ManagedCluster, so any change of it counts.
	Object bool
	// Resources: status.allocatable or status.capacity (ResourceAllocatableCPU/Memory, a
	// plugin declaring resources).
	Resources bool
	// AllScores: any AddOnPlacementScore of the cluster (a CEL expression that mentions
	// scores, a plugin whose inputs are not known yet).
	AllScores bool
	// Scores: AddOnPlacementScore name → the score names read (AddOn prioritizers, plugins
	// declaring addOnScores).
	Scores map[string][]string
}

// ReadsScore says whether the placement reads score of the AddOnPlacementScore resource.
func (r *Reads) ReadsScore(resource, score string) bool {
	if r.AllScores {
		return true
	}
	for _, s := range r.Scores[resource] {
		if s == score {
			return true
		}
	}
	return false
}

func (r *Reads) addScore(resource, score string) {
	if r.Scores == nil {
		r.Scores = map[string][]string{}
	}
	r.Scores[resource] = append(r.Scores[resource], score)
}

func (r *Reads) addInputs(d *abi.PrioritizerInputs) {
	if len(d.Resources) > 0 {
		r.Resources = true
	}
	for _, s := range d.AddOnScores {
		r.addScore(s.ResourceName, s.ScoreName)
	}
}

// everything is what a prioritizer of unknown inputs may read.
func (r *Reads) everything() { r.Object, r.Resources, r.AllScores = true, true, true }

// builtInReads are OCM's built-in prioritizers' reads when their plugin has not declared
// its inputs yet: Balance and Steady read decisions only.
var builtInReads = map[string]func(*Reads){
	clusterv1beta1.PrioritizerResourceAllocatableCPU:    func(r *Reads) { r.Resources = true },
	clusterv1beta1.PrioritizerResourceAllocatableMemory: func(r *Reads) { r.Resources = true },
	clusterv1beta1.PrioritizerBalance:                   func(*Reads) {},
	clusterv1beta1.PrioritizerSteady:                    func(*Reads) {},
}

// Reads says what p reads of its clusters besides labels, claims, taints and deletion. A
// misconfigured placement reads what its parts that do resolve read; it is decided again on
// its own spec change or a plugin change anyway.
func (sch *Scheduler) Reads(p *clusterv1beta1.Placement) Reads {
	var r Reads
	for _, pr := range p.Spec.Predicates {
		for _, expr := range pr.RequiredClusterSelector.CelSelector.CelExpressions {
			r.Object = true
			// managedCluster.scores(...) is the only way to the scores (its receiver carries
			// them under scoresKey, which also contains the word).
			if strings.Contains(expr, "scores") {
				r.AllScores = true
			}
		}
	}
	prios, err := sch.prioritizers(p)
	if err != nil {
		// Unresolvable (a plugin missing): its spec or the plugin's arrival wakes it.
		return r
	}
	for _, c := range prios {
		switch {
		case strings.HasPrefix(c.name, "AddOn/"):
			res, score, _ := strings.Cut(strings.TrimPrefix(c.name, "AddOn/"), "/")
			r.addScore(res, score)
		case strings.HasPrefix(c.name, "Plugin/"):
			if d, ok := sch.declaredInputs(strings.TrimPrefix(c.name, "Plugin/")); ok {
				r.addInputs(d)
			} else {
				r.everything()
			}
		default: // a built-in, native or served by a WasmPlugin
			if f, ok := builtInReads[c.name]; ok {
				f(&r)
			} else {
				r.everything()
			}
		}
	}
	return r
}

// declaredInputs are the inputs the plugin serving name declared, once it has been asked.
func (sch *Scheduler) declaredInputs(name string) (*abi.PrioritizerInputs, bool) {
	if sch.Registry == nil {
		return nil, false
	}
	m, ok := sch.Registry.Get(name)
	if !ok {
		return nil, false
	}
	v, ok := sch.decls.Load(m.Name() + "@" + m.Digest())
	if !ok {
		return nil, false
	}
	return v.(*abi.PrioritizerInputs), true
}

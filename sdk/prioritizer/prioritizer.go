// Package prioritizer is the SDK for Prioritizer plugins.
//
// A prioritizer declares which cluster attributes it reads (Inputs) and scores all
// candidate clusters of a scheduling cycle in one call (Score):
//
//	type plugin struct{}
//
//	func (plugin) Inputs(sdk.Host) (abi.PrioritizerInputs, error) {
//		return abi.PrioritizerInputs{Labels: []string{"tier"}}, nil
//	}
//
//	func (plugin) Score(_ sdk.Host, in *abi.ScoreInput, scores []int64) error {
//		tier := in.LabelColumn("tier")
//		gold, _ := in.StringID("gold")
//		for i := range scores {
//			if tier.ID(i) == gold {
//				scores[i] = 100
//			}
//		}
//		return nil
//	}
//
//	func init() { prioritizer.Register(plugin{}) }
//	func main() {}
//
// Score reads the declared attributes from *abi.ScoreInput: LabelColumn,
// ClaimColumn, ResourceColumn and AddOnScoreColumn, Name(i) with ClusterNames,
// and the placement being scheduled when declared: DecisionCount(i),
// DecisionCounts and MaxDecisionCount (Decisions: the other placements'
// decisions per cluster, as OCM's Balance reads them), Selected(i) and Selection
// (Selected: the clusters this placement's current decisions name, as OCM's
// Steady reads them). The Scorer checks the input carries exactly what Inputs
// declared before Score runs.
package prioritizer

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Plugin is a prioritizer's logic.
type Plugin interface {
	// Inputs declares the attributes Score reads. It may depend on the plugin's
	// configuration but must return the same answer every time for a given one.
	Inputs(h sdk.Host) (abi.PrioritizerInputs, error)
	// Score fills scores[i] for cluster i of in (len(scores) == in.Len(), all zero
	// on entry). Scores outside [-100, 100] are clamped by the host.
	Score(h sdk.Host, in *abi.ScoreInput, scores []int64) error
}

var registered Plugin

// Register makes p the plugin served by this module's exports. Call it from init.
func Register(p Plugin) { registered = p }

// Registered returns the registered plugin, or nil.
func Registered() Plugin { return registered }

// DeclareInputs runs the declare_inputs export's logic: it validates p's
// declaration and returns it as JSON.
func DeclareInputs(p Plugin, h sdk.Host) ([]byte, error) {
	decl, err := p.Inputs(h)
	if err != nil {
		return nil, err
	}
	if err := decl.Validate(); err != nil {
		return nil, err
	}
	return decl.AppendJSON(nil), nil
}

// Scorer runs the score export's logic for one plugin, caching its declaration.
type Scorer struct {
	P      Plugin
	decl   *abi.PrioritizerInputs
	scores []int64
}

// Score decodes input, checks it carries the declared columns, and runs the
// plugin. The returned slice is reused by the next call.
func (s *Scorer) Score(h sdk.Host, input []byte) ([]int64, error) {
	in, err := abi.DecodeScoreInput(input)
	if err != nil {
		return nil, err
	}
	if s.decl == nil {
		decl, err := s.P.Inputs(h)
		if err != nil {
			return nil, err
		}
		s.decl = &decl
	}
	if err := in.CheckDeclared(s.decl); err != nil {
		return nil, err
	}
	n := in.Len()
	if cap(s.scores) < n {
		s.scores = make([]int64, n)
	}
	scores := s.scores[:n]
	clear(scores)
	if err := s.P.Score(h, in, scores); err != nil {
		return nil, err
	}
	return scores, nil
}

// EncodeAnswer encodes scores as the score export's answer: clamped to [-100, 100]
// and sent one byte each (the ABI's compact form), which costs the guest an
// eighth of the host calls the int64 form needs.
func EncodeAnswer(dst []byte, scores []int64) []byte { return abi.AppendCompactScores(dst, scores) }

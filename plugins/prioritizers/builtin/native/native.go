// Package native computes OCM's four BuiltIn placement prioritizers — Balance,
// Steady, ResourceAllocatableCPU and ResourceAllocatableMemory — in plain Go.
//
// It is both halves of one implementation: the Wasm plugin
// plugins/prioritizers/builtin compiles this package into its module and scores
// the decoded score input with it (Scorer.ScoreInput), and a host scores the same
// abi.ClusterSource it would encode for the plugin without Wasm (Scorer.Score),
// e.g. to compare a scheduling pass against native Go. Both paths end in the same
// arithmetic (BalanceScores, SteadyScores, ResourceScores), so they cannot
// disagree. The package imports nothing but the SDK's abi and jsonlite, so it
// stays small inside a guest.
//
// The arithmetic is OCM's (open-cluster-management.io/ocm, pkg/placement/plugins),
// float expressions included, so scores match OCM's to the integer:
//
//   - Balance: with count the decisions of the other placements naming a cluster
//     and maxCount the largest count of any cluster (candidate or not), a cluster
//     with no decision scores 100, others 2·trunc(100·(0.5 − count/maxCount)):
//     even scores from 100 down to −100 for the most loaded.
//   - Steady: 100 for a cluster this placement's current decisions name, else 0.
//   - ResourceAllocatable{CPU,Memory}: over the candidates reporting
//     status.allocatable cpu (memory), trunc((ratio − 0.5)·2·100) with
//     ratio = (v − min)/(max − min): −100 for the least, 100 for the most; 100 for
//     all when max = min. A cluster not reporting it gets no score from OCM, which
//     sums as 0: it scores 0 here.
package native

import (
	"errors"
	"math"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

// OCM's BuiltIn prioritizer names (Placement spec.prioritizerPolicy.configurations
// [].scoreCoordinate.builtIn), which are also the values of the plugin's pluginConfig.
const (
	Balance                   = "Balance"
	Steady                    = "Steady"
	ResourceAllocatableCPU    = "ResourceAllocatableCPU"
	ResourceAllocatableMemory = "ResourceAllocatableMemory"
)

// Names returns the BuiltIn prioritizers this package implements.
func Names() []string {
	return []string{Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory}
}

const namesList = Balance + ", " + Steady + ", " + ResourceAllocatableCPU + ", " + ResourceAllocatableMemory

// ConfigField is the pluginConfig field naming the prioritizer.
const ConfigField = "prioritizer"

// Config returns the pluginConfig that selects prioritizer name, e.g.
// {"prioritizer":"Balance"}.
func Config(name string) []byte {
	w := jsonlite.NewWriter(nil)
	w.BeginObject()
	w.StringField(ConfigField, name)
	w.EndObject()
	return w.Bytes()
}

// ParseConfig returns the prioritizer a pluginConfig selects. It must be exactly
// {"prioritizer": <one of Names>}.
func ParseConfig(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", errors.New(`pluginConfig: missing; want {"prioritizer": one of ` + namesList + `}`)
	}
	r := jsonlite.NewReader(raw)
	if r.Peek() != jsonlite.Object {
		return "", errors.New(`pluginConfig must be a JSON object: {"prioritizer": one of ` + namesList + `}`)
	}
	name, seen := "", false
	err := r.Object(func(key string) error {
		if key != ConfigField {
			return errors.New("pluginConfig: unknown field " + strconv.Quote(key) + " (known: " + ConfigField + ")")
		}
		var err error
		name, err = r.String()
		seen = true
		if err != nil {
			return errors.New("pluginConfig." + ConfigField + ": " + err.Error())
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return "", err
	}
	if !seen {
		return "", errors.New("pluginConfig." + ConfigField + ": missing; want one of " + namesList)
	}
	if _, err := Inputs(name); err != nil {
		return "", errors.New("pluginConfig." + ConfigField + ": " + err.Error())
	}
	return name, nil
}

// resourceName is the status.allocatable entry a resource prioritizer reads.
func resourceName(name string) string {
	switch name {
	case ResourceAllocatableCPU:
		return "cpu"
	case ResourceAllocatableMemory:
		return "memory"
	}
	return ""
}

// Inputs returns what prioritizer name reads: the plugin's declare_inputs answer.
func Inputs(name string) (abi.PrioritizerInputs, error) {
	switch name {
	case Balance:
		return abi.PrioritizerInputs{Decisions: true}, nil
	case Steady:
		return abi.PrioritizerInputs{Selected: true}, nil
	case ResourceAllocatableCPU, ResourceAllocatableMemory:
		return abi.PrioritizerInputs{Resources: []abi.ResourceInput{{Kind: abi.ResourceAllocatable, Name: resourceName(name)}}}, nil
	}
	return abi.PrioritizerInputs{}, errors.New(strconv.Quote(name) + " is not a BuiltIn prioritizer (known: " + namesList + ")")
}

// Scorer scores with one BuiltIn prioritizer, keeping scratch space between
// calls. Not safe for concurrent use.
type Scorer struct {
	name   string
	decl   abi.PrioritizerInputs
	counts []int64
	vals   []int64
	sel    []bool
}

// New returns a Scorer for the BuiltIn prioritizer name (see Names).
func New(name string) (*Scorer, error) {
	decl, err := Inputs(name)
	if err != nil {
		return nil, err
	}
	return &Scorer{name: name, decl: decl}, nil
}

// Name is the BuiltIn prioritizer's name.
func (s *Scorer) Name() string { return s.name }

// Inputs is what the prioritizer reads (the plugin declares the same).
func (s *Scorer) Inputs() abi.PrioritizerInputs { return s.decl }

// Score fills scores (len src.Len()) from src, reading what a host would encode
// for the plugin: Balance and Steady need src to implement abi.PlacementSource,
// and Balance reads abi.MaxDecisionSource when src implements it. Values are
// taken exactly as the encoder sends them (counts saturated to uint32), so the
// result equals the plugin's on the same source.
func (s *Scorer) Score(src abi.ClusterSource, scores []int64) error {
	n := src.Len()
	if len(scores) != n {
		return errors.New(s.name + ": " + strconv.Itoa(len(scores)) + " scores for " + strconv.Itoa(n) + " clusters")
	}
	var place abi.PlacementSource
	if s.decl.Decisions || s.decl.Selected {
		var ok bool
		if place, ok = src.(abi.PlacementSource); !ok {
			return errors.New(s.name + ": the cluster source does not implement abi.PlacementSource")
		}
	}
	switch s.name {
	case Balance:
		s.counts = grow(s.counts, n)
		for i := range s.counts {
			v := place.DecisionCount(i)
			if v < 0 {
				return errors.New(s.name + ": decision count of cluster " + strconv.Itoa(i) + " (" + src.Name(i) + ") is " + strconv.FormatInt(v, 10) + ", want ≥ 0")
			}
			s.counts[i] = wireCount(v)
		}
		var maxCount int64
		if m, ok := src.(abi.MaxDecisionSource); ok {
			maxCount = wireCount(m.MaxDecisionCount())
		}
		BalanceScores(maxCount, s.counts, scores)
	case Steady:
		s.sel = grow(s.sel, n)
		for i := range s.sel {
			s.sel[i] = place.Selected(i)
		}
		SteadyScores(s.sel, scores)
	default:
		s.vals = grow(s.vals, n)
		res := resourceName(s.name)
		for i := range s.vals {
			v, ok := src.Resource(i, abi.ResourceAllocatable, res)
			switch {
			case !ok:
				v = abi.NoValue
			case v == abi.NoValue:
				v++ // as the encoder does: a present value never reads as absent
			}
			s.vals[i] = v
		}
		ResourceScores(s.vals, scores)
	}
	return nil
}

// wireCount is a decision count as the score input carries it.
func wireCount(v int64) int64 { return min(max(v, 0), math.MaxUint32) }

// ScoreInput fills scores (len in.Len()) from a decoded score input that carries
// what Inputs declares: the plugin's score export.
func (s *Scorer) ScoreInput(in *abi.ScoreInput, scores []int64) error {
	if len(scores) != in.Len() {
		return errors.New(s.name + ": " + strconv.Itoa(len(scores)) + " scores for " + strconv.Itoa(in.Len()) + " clusters")
	}
	if err := in.CheckDeclared(&s.decl); err != nil {
		return err
	}
	switch s.name {
	case Balance:
		s.counts = in.DecisionCounts(s.counts)
		BalanceScores(in.MaxDecisionCount(), s.counts, scores)
	case Steady:
		s.sel = in.Selection(s.sel)
		SteadyScores(s.sel, scores)
	default:
		s.vals = in.ResourceColumn(abi.ResourceAllocatable, resourceName(s.name)).Values(s.vals)
		ResourceScores(s.vals, scores)
	}
	return nil
}

// BalanceScores sets scores[i] from counts[i], the decisions of the other
// placements naming cluster i, and maxCount, the largest count of any cluster
// (a smaller value stands for the largest of counts): OCM's Balance. scores is at
// least as long as counts; the same holds for SteadyScores and ResourceScores.
func BalanceScores(maxCount int64, counts, scores []int64) {
	for _, c := range counts {
		maxCount = max(maxCount, c)
	}
	for i, c := range counts {
		if c <= 0 {
			// OCM leaves clusters no other placement chose at MaxClusterScore.
			scores[i] = abi.MaxClusterScore
			continue
		}
		usage := float64(c) / float64(maxCount)
		scores[i] = 2 * int64(float64(abi.MaxClusterScore)*(0.5-usage))
	}
}

// SteadyScores sets scores[i] to 100 when selected[i], else 0: OCM's Steady.
func SteadyScores(selected []bool, scores []int64) {
	for i, sel := range selected {
		scores[i] = 0
		if sel {
			scores[i] = abi.MaxClusterScore
		}
	}
}

// ResourceScores sets scores[i] from values[i] (abi.NoValue when cluster i does
// not report the resource): OCM's ResourceAllocatable{CPU,Memory} over milli-units.
// OCM computes in float64 over Quantity.AsApproximateFloat64; the same expression
// over milli-units gives the same integers but for float rounding at the last bit.
func ResourceScores(values, scores []int64) {
	lo, hi, seen := int64(math.MaxInt64), int64(math.MinInt64), false
	for _, v := range values {
		if v != abi.NoValue {
			lo, hi, seen = min(lo, v), max(hi, v), true
		}
	}
	fmin := float64(lo)
	span := float64(hi) - fmin
	for i, v := range values {
		switch {
		case !seen || v == abi.NoValue:
			// OCM gives a cluster without the resource no score, which the
			// scheduler sums as 0.
			scores[i] = 0
		case span == 0:
			// All reporting clusters have the same amount (or amounts float64
			// cannot tell apart).
			scores[i] = abi.MaxClusterScore
		default:
			ratio := (float64(v) - fmin) / span
			scores[i] = int64((ratio - 0.5) * 2.0 * 100.0)
		}
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

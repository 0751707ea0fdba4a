package native

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk/abi"
)

const none = abi.NoValue

func TestBalanceScores(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxCount int64
		counts   []int64
		want     []int64
	}{
		{"spread", 4, []int64{0, 1, 2, 3, 4}, []int64{100, 50, 0, -50, -100}},
		// OCM truncates 100·(0.5−usage) and doubles it: 100·(0.5−1/3) = 16.67 → 16 → 32.
		{"thirds", 3, []int64{1, 3, 2}, []int64{32, -100, -32}},
		{"maxCount 0: nobody chose anything", 0, []int64{0, 0, 0}, []int64{100, 100, 100}},
		{"ties at the top", 2, []int64{2, 2, 0}, []int64{-100, -100, 100}},
		{"ties in the middle", 4, []int64{1, 1}, []int64{50, 50}},
		{"the busiest cluster is not a candidate", 5, []int64{1, 0}, []int64{60, 100}},
		{"a maximum below the counts stands for theirs", 0, []int64{1, 2}, []int64{0, -100}},
		{"one decision anywhere", 1, []int64{1, 0}, []int64{-100, 100}},
		{"large counts", math.MaxUint32, []int64{math.MaxUint32, math.MaxUint32 / 2, 1}, []int64{-100, 0, 98}},
		{"no clusters", 7, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]int64, len(tc.counts))
			for i := range got {
				got[i] = 12345 // scores are set, not added to
			}
			BalanceScores(tc.maxCount, tc.counts, got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("BalanceScores(%d, %v) = %v, want %v", tc.maxCount, tc.counts, got, tc.want)
			}
			if ref := ocmBalance(tc.maxCount, tc.counts); !slices.Equal(got, ref) {
				t.Fatalf("OCM's Balance gives %v, this %v", ref, got)
			}
		})
	}
}

// ocmBalance is OCM's Balance.Score, transcribed with its map of counts: clusters no
// other placement chose keep MaxClusterScore.
func ocmBalance(maxCount int64, counts []int64) []int64 {
	decisionCount := map[int]int64{}
	for i, c := range counts {
		if c > 0 {
			decisionCount[i] = c
		}
		maxCount = max(maxCount, c)
	}
	scores := make([]int64, len(counts))
	for i := range scores {
		scores[i] = 100
		if count, ok := decisionCount[i]; ok {
			usage := float64(count) / float64(maxCount)
			scores[i] = 2 * int64(float64(100)*(0.5-usage))
		}
	}
	return scores
}

func TestBalanceMatchesOCMExhaustively(t *testing.T) {
	for m := int64(1); m <= 300; m++ {
		counts := make([]int64, m+1)
		for c := range counts {
			counts[c] = int64(c)
		}
		got := make([]int64, len(counts))
		BalanceScores(m, counts, got)
		if ref := ocmBalance(m, counts); !slices.Equal(got, ref) {
			t.Fatalf("maxCount %d: %v, OCM %v", m, got, ref)
		}
		for i, s := range got {
			if s < abi.MinClusterScore || s > abi.MaxClusterScore || s%2 != 0 || (i > 0 && s > got[i-1]) {
				t.Fatalf("maxCount %d: scores %v are not even, within [-100, 100] and non-increasing", m, got)
			}
		}
	}
}

func TestSteadyScores(t *testing.T) {
	for _, tc := range []struct {
		sel  []bool
		want []int64
	}{
		{[]bool{true, false, true}, []int64{100, 0, 100}},
		{[]bool{false, false}, []int64{0, 0}},
		{[]bool{true}, []int64{100}},
		{nil, nil},
	} {
		got := make([]int64, len(tc.sel))
		for i := range got {
			got[i] = -7
		}
		SteadyScores(tc.sel, got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("SteadyScores(%v) = %v, want %v", tc.sel, got, tc.want)
		}
	}
}

func TestResourceScores(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []int64
		want   []int64
	}{
		{"spread", []int64{1000, 2000, 3000}, []int64{-100, 0, 100}},
		// (1/3 − 0.5)·200 = −33.3 → −33 (OCM truncates toward zero).
		{"thirds", []int64{0, 1000, 3000}, []int64{-100, -33, 100}},
		{"missing scores 0", []int64{3500, 4000, 8000, none}, []int64{-100, -77, 100, 0}},
		{"all equal score 100", []int64{none, 4000, 4000}, []int64{0, 100, 100}},
		{"ties at the bottom", []int64{2000, 2000, 6000, 4000}, []int64{-100, -100, 100, 0}},
		{"one cluster", []int64{5}, []int64{100}},
		{"nobody reports it", []int64{none, none}, []int64{0, 0}},
		{"negative and zero", []int64{-1000, 0, 1000}, []int64{-100, 0, 100}},
		{"extremes", []int64{math.MinInt64 + 1, math.MaxInt64, 0}, []int64{-100, 100, 0}},
		{"memory in milli-bytes", []int64{16 << 30 * 1000, 64 << 30 * 1000, 512 << 30 * 1000}, []int64{-100, -80, 100}},
		{"no clusters", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]int64, len(tc.values))
			for i := range got {
				got[i] = 12345
			}
			ResourceScores(tc.values, got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ResourceScores(%v) = %v, want %v", tc.values, got, tc.want)
			}
		})
	}
}

// attributesOnly hides ClusterList's abi.PlacementSource methods.
type attributesOnly struct{ abi.ClusterSource }

// placement adds what other placements chose beyond the candidates.
type placement struct {
	abi.ClusterList
	max int64
}

func (p placement) MaxDecisionCount() int64 { return p.max }

var clusters = abi.ClusterList{
	{Name: "a", Allocatable: map[string]int64{"cpu": 4000, "memory": 16 << 30 * 1000}, Decisions: 2, Selected: true},
	{Name: "b", Allocatable: map[string]int64{"cpu": 8000}, Decisions: 1},
	{Name: "c", Allocatable: map[string]int64{"cpu": 6000, "memory": 32 << 30 * 1000}},
	{Name: "d", Allocatable: map[string]int64{"memory": 32 << 30 * 1000}, Decisions: 4, Selected: true},
}

func TestScorer(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  abi.ClusterSource
		want []int64
	}{
		{Balance, clusters, []int64{0, 50, 100, -100}},
		{Balance, placement{clusters, 8}, []int64{50, 74, 100, 0}},
		{Steady, clusters, []int64{100, 0, 0, 100}},
		{ResourceAllocatableCPU, clusters, []int64{-100, 100, 0, 0}},
		{ResourceAllocatableMemory, clusters, []int64{-100, 0, 100, 100}},
	} {
		s, err := New(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int64, tc.src.Len())
		if err := s.Score(tc.src, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if err := s.Score(tc.src, got[:1]); err == nil || !strings.Contains(err.Error(), "1 scores for 4 clusters") {
			t.Errorf("%s: short scores: error %v", tc.name, err)
		}
	}
	for _, name := range []string{Balance, Steady} {
		s, _ := New(name)
		if err := s.Score(attributesOnly{clusters}, make([]int64, len(clusters))); err == nil || !strings.Contains(err.Error(), "does not implement abi.PlacementSource") {
			t.Errorf("%s over a source without placement facts: error %v", name, err)
		}
	}
	for _, name := range []string{ResourceAllocatableCPU, ResourceAllocatableMemory} {
		s, _ := New(name)
		if err := s.Score(attributesOnly{clusters}, make([]int64, len(clusters))); err != nil {
			t.Errorf("%s needs no placement facts: %v", name, err)
		}
	}
	s, _ := New(Balance)
	bad := abi.ClusterList{{Name: "x", Decisions: -2}}
	if err := s.Score(bad, make([]int64, 1)); err == nil || !strings.Contains(err.Error(), "decision count of cluster 0 (x) is -2") {
		t.Errorf("negative count: error %v", err)
	}
	if _, err := New("LeastUsed"); err == nil || !strings.Contains(err.Error(), `"LeastUsed" is not a BuiltIn prioritizer`) {
		t.Errorf("unknown prioritizer: error %v", err)
	}
}

func TestInputs(t *testing.T) {
	want := map[string]abi.PrioritizerInputs{
		Balance:                   {Decisions: true},
		Steady:                    {Selected: true},
		ResourceAllocatableCPU:    {Resources: []abi.ResourceInput{{Kind: abi.ResourceAllocatable, Name: "cpu"}}},
		ResourceAllocatableMemory: {Resources: []abi.ResourceInput{{Kind: abi.ResourceAllocatable, Name: "memory"}}},
	}
	for _, name := range Names() {
		decl, err := Inputs(name)
		if err != nil {
			t.Fatal(err)
		}
		w := want[name]
		if string(decl.AppendJSON(nil)) != string(w.AppendJSON(nil)) {
			t.Errorf("%s declares %s", name, decl.AppendJSON(nil))
		}
		if err := decl.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, name := range Names() {
		got, err := ParseConfig(Config(name))
		if err != nil || got != name {
			t.Errorf("ParseConfig(%s) = %q, %v", Config(name), got, err)
		}
	}
	if got := string(Config(Balance)); got != `{"prioritizer":"Balance"}` {
		t.Errorf("Config(Balance) = %s", got)
	}
	for _, tc := range []struct{ config, msg string }{
		{"", `pluginConfig: missing; want {"prioritizer": one of Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory}`},
		{`[]`, "pluginConfig must be a JSON object"},
		{`{}`, "pluginConfig.prioritizer: missing; want one of Balance, Steady"},
		{`{"prioritizer": "balance"}`, `pluginConfig.prioritizer: "balance" is not a BuiltIn prioritizer (known: Balance, Steady, ResourceAllocatableCPU, ResourceAllocatableMemory)`},
		{`{"prioritizer": "ResourceAllocatableGPU"}`, `"ResourceAllocatableGPU" is not a BuiltIn prioritizer`},
		{`{"prioritizer": 1}`, "pluginConfig.prioritizer: "},
		{`{"prioritizer": "Balance", "weight": 2}`, `pluginConfig: unknown field "weight" (known: prioritizer)`},
		{`{"prioritizer": "Balance"} x`, "invalid"},
	} {
		if _, err := ParseConfig([]byte(tc.config)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("config %s: error %v, want one containing %q", tc.config, err, tc.msg)
		}
	}
}

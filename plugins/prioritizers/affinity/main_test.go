package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/plugins/dist"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/sdktest/wasmrun"
)

const benchConfig = `{
  "labels": [{"key": "env", "value": "prod", "score": 30}, {"key": "env", "value": "dev", "score": -20}, {"key": "tier", "value": "gold", "score": 20}],
  "claims": [{"name": "region", "value": "us-east-1", "score": 20}],
  "resources": [{"kind": "Allocatable", "name": "cpu", "weight": 30}]
}`

var clusters = abi.ClusterList{
	// 30 + 20 + 20 + 30 = 100
	{Name: "a", Labels: map[string]string{"env": "prod", "tier": "gold"}, Claims: map[string]string{"region": "us-east-1"}, Allocatable: map[string]int64{"cpu": 8000}},
	// -20 + 0 + 0 + 30*(2000/8000)=7.5 → 8 (round half away from zero) → -12
	{Name: "b", Labels: map[string]string{"env": "dev"}, Allocatable: map[string]int64{"cpu": 2000}},
	// 30 + 0 + 20 + 0 (the minimum CPU) = 50
	{Name: "c", Labels: map[string]string{"env": "prod"}, Claims: map[string]string{"region": "us-east-1"}, Allocatable: map[string]int64{"cpu": 0}},
	// nothing known about it: 0
	{Name: "d"},
}

var want = []int64{100, -12, 50, 0}

func TestInputsFollowConfig(t *testing.T) {
	decl, err := sdktest.DeclareInputs(&affinity{}, sdktest.NewHost(benchConfig))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(decl.Labels, []string{"env", "tier"}) || !slices.Equal(decl.Claims, []string{"region"}) ||
		len(decl.Resources) != 1 || decl.Resources[0] != (abi.ResourceInput{Kind: abi.ResourceAllocatable, Name: "cpu"}) || decl.ClusterNames {
		t.Fatalf("declaration %+v does not match the config", decl)
	}
}

func TestScore(t *testing.T) {
	got, err := sdktest.Score(&affinity{}, sdktest.NewHost(benchConfig), clusters)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scores %v, want %v", got, want)
	}
}

func TestScoreClampsTheSum(t *testing.T) {
	cfg := `{"labels": [{"key": "a", "value": "x", "score": 100}, {"key": "b", "value": "y", "score": 100}]}`
	got, err := sdktest.Score(&affinity{}, sdktest.NewHost(cfg), abi.ClusterList{
		{Name: "both", Labels: map[string]string{"a": "x", "b": "y"}},
		{Name: "one", Labels: map[string]string{"a": "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{100, 100}) {
		t.Fatalf("scores %v, want [100 100]", got)
	}
}

func TestDefaultConfigPrefersAllocatableCPU(t *testing.T) {
	got, err := sdktest.Score(&affinity{}, sdktest.NewHost(""), abi.ClusterList{
		{Name: "small", Allocatable: map[string]int64{"cpu": 1000}},
		{Name: "big", Allocatable: map[string]int64{"cpu": 5000}},
		{Name: "mid", Allocatable: map[string]int64{"cpu": 3000}},
		{Name: "unknown"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{0, 100, 50, 0}) {
		t.Fatalf("scores %v, want [0 100 50 0]", got)
	}
}

func TestValidateConfig(t *testing.T) {
	for _, tc := range []struct{ config, wantErr string }{
		{benchConfig, ""},
		{"", ""},
		{`{"resources": [{"kind": "Capacity", "name": "memory", "weight": -40}]}`, ""},
		{`[]`, "pluginConfig must be a JSON object"},
		{`{}`, "pluginConfig: no rules"},
		{`{"label": []}`, `pluginConfig: unknown field "label"`},
		{`{"labels": [{"key": "", "value": "x", "score": 1}]}`, "pluginConfig.labels[0].key: must not be empty"},
		{`{"labels": [{"key": "a", "value": "x", "score": 101}]}`, "pluginConfig.labels[0].score: 101 is outside [-100, 100]"},
		{`{"labels": [{"key": "a", "value": "x", "score": "high"}]}`, "pluginConfig.labels[0].score: invalid JSON"},
		{`{"claims": [{"name": "a", "value": "x", "weight": 1}]}`, "pluginConfig.claims[0].weight: unknown field"},
		{`{"resources": [{"kind": "Requested", "name": "cpu", "weight": 1}]}`, `pluginConfig.resources[0].kind: "Requested" is not Allocatable or Capacity`},
		{`{"resources": [{"name": "", "weight": 1}]}`, "pluginConfig.resources[0].name: must not be empty"},
	} {
		err := sdktest.ValidateConfig(&affinity{}, sdktest.NewHost(tc.config))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("config %s: unexpected error %v", tc.config, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("config %s: error %v, want one containing %q", tc.config, err, tc.wantErr)
		}
	}
}

// TestShippedModule runs the module in plugins/dist through the real host and
// checks it scores exactly like the logic above.
func TestShippedModule(t *testing.T) {
	p, err := dist.Get("prioritizer-affinity")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := p.Wasm()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := wasmrun.Load(t, mod, abi.TypePrioritizer, []byte(benchConfig))
	pr, err := wasmrun.NewPrioritizer(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pr.Score(ctx, clusters)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("wasm scores %v, want %v", got, want)
	}
	// A second cycle on the same instance reuses buffers; results must not leak across.
	got, err = pr.Score(ctx, clusters[2:])
	if err != nil {
		t.Fatal(err)
	}
	// c is now the only cluster reporting CPU, so it takes the full weight: 30+20+30.
	if !slices.Equal(got, []int64{80, 0}) {
		t.Fatalf("second cycle scores %v, want [80 0]", got)
	}
}

package sdktest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
)

// names scores clusters by name length and logs; its declaration comes from config.
type names struct{ calls int }

func (p *names) Inputs(h sdk.Host) (abi.PrioritizerInputs, error) {
	p.calls++
	if string(h.Config()) == "drift" && p.calls > 1 {
		return abi.PrioritizerInputs{Labels: []string{"other"}}, nil
	}
	if string(h.Config()) == "bad" {
		return abi.PrioritizerInputs{Labels: []string{""}}, nil
	}
	return abi.PrioritizerInputs{ClusterNames: true}, nil
}

func (p *names) Score(h sdk.Host, in *abi.ScoreInput, scores []int64) error {
	for i := range scores {
		scores[i] = int64(len(in.Name(i))) * 60
	}
	h.Log(sdk.LogInfo, "scored")
	return nil
}

func TestScoreGoesThroughTheWire(t *testing.T) {
	h := sdktest.NewHost("")
	got, err := sdktest.Score(&names{}, h, abi.ClusterList{{Name: "a"}, {Name: "bb"}, {Name: ""}})
	if err != nil {
		t.Fatal(err)
	}
	// 60 and 120 (clamped to 100) and 0: the host-side decoder clamps.
	if !slices.Equal(got, []int64{60, 100, 0}) {
		t.Fatalf("scores %v", got)
	}
	if logs := h.Logs(); len(logs) != 1 || logs[0].Message != "scored" || logs[0].Level != sdk.LogInfo {
		t.Fatalf("logs %+v", logs)
	}
}

func TestDeclarationErrors(t *testing.T) {
	if _, err := sdktest.Score(&names{}, sdktest.NewHost("bad"), abi.ClusterList{{Name: "a"}}); err == nil || !strings.Contains(err.Error(), "labels[0]: must not be empty") {
		t.Fatalf("invalid declaration: %v", err)
	}
	// A plugin whose declaration changes between declare_inputs and score is caught.
	if _, err := sdktest.Score(&names{}, sdktest.NewHost("drift"), abi.ClusterList{{Name: "a"}}); err == nil || !strings.Contains(err.Error(), "cluster names sent=true, declared=false") {
		t.Fatalf("drifting declaration: %v", err)
	}
}

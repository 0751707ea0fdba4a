// Command builtin is Flotilla's Wasm implementation of OCM's four BuiltIn placement
// prioritizers. One module serves all four; its pluginConfig picks one:
//
//	{"prioritizer": "Balance"}                   // reads decisions: other placements' decisions per cluster
//	{"prioritizer": "Steady"}                    // reads selected: this placement's current decisions
//	{"prioritizer": "ResourceAllocatableCPU"}    // reads status.allocatable cpu
//	{"prioritizer": "ResourceAllocatableMemory"} // reads status.allocatable memory
//
// The hub installs it four times (WasmPlugins placement-balance, placement-steady,
// placement-resourceallocatablecpu, placement-resourceallocatablememory; see
// hub/plugininstall). A missing or unknown prioritizer is rejected by
// validate_config at load and by declare_inputs.
//
// The scoring is package native, which a host can also call without Wasm; see
// there for the arithmetic (OCM's, to the integer).
package main

import (
	"github.com/flotilla-dev/flotilla/plugins/prioritizers/builtin/native"
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/prioritizer"
)

type builtin struct {
	// scorer is built from pluginConfig on first use and kept by the instance.
	scorer *native.Scorer
}

func init() { prioritizer.Register(&builtin{}) }

func main() {}

func (b *builtin) load(h sdk.Host) (*native.Scorer, error) {
	if b.scorer == nil {
		name, err := native.ParseConfig(h.Config())
		if err != nil {
			return nil, err
		}
		if b.scorer, err = native.New(name); err != nil {
			return nil, err
		}
	}
	return b.scorer, nil
}

func (b *builtin) ValidateConfig(raw []byte) error {
	_, err := native.ParseConfig(raw)
	return err
}

func (b *builtin) Inputs(h sdk.Host) (abi.PrioritizerInputs, error) {
	s, err := b.load(h)
	if err != nil {
		return abi.PrioritizerInputs{}, err
	}
	return s.Inputs(), nil
}

func (b *builtin) Score(h sdk.Host, in *abi.ScoreInput, scores []int64) error {
	s, err := b.load(h)
	if err != nil {
		return err
	}
	return s.ScoreInput(in, scores)
}

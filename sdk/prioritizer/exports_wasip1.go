//go:build wasip1

package prioritizer

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/internal/guest"
)

var (
	scorer Scorer
	answer []byte
)

//go:wasmexport declare_inputs
func declareInputs() int32 {
	return guest.Serve(registered, func(p Plugin, h sdk.Host, _ []byte) ([]byte, error) { return DeclareInputs(p, h) })
}

//go:wasmexport score
func score() int32 { return guest.Serve(registered, scoreAnswer) }

// scoreAnswer scores input with p and encodes the answer into a buffer reused by the next call.
func scoreAnswer(p Plugin, h sdk.Host, input []byte) ([]byte, error) {
	scorer.P = p
	scores, err := scorer.Score(h, input)
	if err != nil {
		return nil, err
	}
	answer = EncodeAnswer(answer[:0], scores)
	return answer, nil
}

//go:wasmexport validate_config
func validateConfig() int32 { return guest.ValidateConfig(registered) }

//go:wasmexport flotilla_abi_version
func abiVersion() int32 { return guest.ABIVersion() }

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
	return guest.Run(func() error {
		if registered == nil {
			return guest.ErrNotRegistered
		}
		out, err := DeclareInputs(registered, guest.TheHost)
		if err != nil {
			return err
		}
		guest.Output(out)
		return nil
	})
}

//go:wasmexport score
func score() int32 {
	return guest.Run(func() error {
		if registered == nil {
			return guest.ErrNotRegistered
		}
		scorer.P = registered
		scores, err := scorer.Score(guest.TheHost, guest.Input())
		if err != nil {
			return err
		}
		answer = EncodeAnswer(answer[:0], scores)
		guest.Output(answer)
		return nil
	})
}

//go:wasmexport validate_config
func validateConfig() int32 {
	return guest.Run(func() error {
		if registered == nil {
			return guest.ErrNotRegistered
		}
		return sdk.ValidateConfig(registered, guest.Input())
	})
}

//go:wasmexport flotilla_abi_version
func abiVersion() int32 { return guest.ABIVersion() }

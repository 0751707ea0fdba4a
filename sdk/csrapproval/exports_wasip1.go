//go:build wasip1

package csrapproval

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/internal/guest"
)

//go:wasmexport review_csr
func export() int32 {
	return guest.Run(func() error {
		if registered == nil {
			return guest.ErrNotRegistered
		}
		out, err := Review(registered, guest.TheHost, guest.Input())
		if err != nil {
			return err
		}
		guest.Output(out)
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

//go:build wasip1

package feedback

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/internal/guest"
)

//go:wasmexport declare_resources
func declareResources() int32 {
	return guest.Serve(registered, func(p Extractor, h sdk.Host, _ []byte) ([]byte, error) { return Declare(p, h) })
}

//go:wasmexport extract_feedback
func export() int32 { return guest.Serve(registered, Extract) }

//go:wasmexport validate_config
func validateConfig() int32 { return guest.ValidateConfig(registered) }

//go:wasmexport flotilla_abi_version
func abiVersion() int32 { return guest.ABIVersion() }

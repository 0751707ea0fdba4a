//go:build wasip1

package transformer

import "github.com/flotilla-dev/flotilla/sdk/internal/guest"

//go:wasmexport transform_manifest
func export() int32 { return guest.Serve(registered, Transform) }

//go:wasmexport validate_config
func validateConfig() int32 { return guest.ValidateConfig(registered) }

//go:wasmexport flotilla_abi_version
func abiVersion() int32 { return guest.ABIVersion() }

//go:build wasip1

package addontemplate

import "github.com/flotilla-dev/flotilla/sdk/internal/guest"

//go:wasmexport render_addon
func export() int32 { return guest.Serve(registered, Render) }

//go:wasmexport validate_config
func validateConfig() int32 { return guest.ValidateConfig(registered) }

//go:wasmexport flotilla_abi_version
func abiVersion() int32 { return guest.ABIVersion() }

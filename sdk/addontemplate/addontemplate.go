// Package addontemplate is the SDK for AddOnTemplate plugins: they render the
// manifests of an add-on for one managed cluster from the add-on's name, the
// cluster, the install namespace, variables and the add-on's configuration.
// Build manifests with jsonlite.Writer to keep encoding/json out of the module.
package addontemplate

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Template is the plugin's logic.
type Template interface {
	RenderAddOn(h sdk.Host, req *abi.AddOnRequest) (abi.AddOnResult, error)
}

var registered Template

// Register makes p the plugin served by this module's exports. Call it from init.
func Register(p Template) { registered = p }

// Registered returns the registered plugin, or nil.
func Registered() Template { return registered }

// Render runs the render_addon export's logic: decode the JSON input, call p, validate
// the answer and encode it as JSON.
func Render(p Template, h sdk.Host, input []byte) ([]byte, error) {
	var req abi.AddOnRequest
	if err := req.DecodeJSON(input); err != nil {
		return nil, err
	}
	res, err := p.RenderAddOn(h, &req)
	if err != nil {
		return nil, err
	}
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return res.AppendJSON(nil), nil
}

// Package addontemplate is the SDK for AddOnTemplate plugins: they render the
// manifests of an add-on for one managed cluster from the add-on's name, the
// cluster (labels, claims, Kubernetes version, capacity and allocatable), the
// install namespace, variables and the add-on's resolved configurations, and may
// add ManifestWork manifestConfigs for them. The host then decorates the
// manifests as it decorates an AddOnTemplate's (AddOnDeploymentConfig node
// placement, image mirrors, proxy, resources, replicas, install namespace, hub
// kubeconfig mount), so plugins need not apply the AddOnDeploymentConfig
// themselves. Build manifests with jsonlite.Writer to keep encoding/json out of
// the module.
package addontemplate

import (
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
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

// JSONPath is a named JSONPath feedback value, e.g. {"replicas", ".status.replicas"}.
type JSONPath struct {
	Name string
	Path string
}

// WellKnownStatus returns a manifestConfig asking the work agent for the
// WellKnownStatus feedback of one resource (group "" is the core group; resource
// is the plural, e.g. "deployments").
func WellKnownStatus(group, resource, namespace, name string) abi.RawJSON {
	w := manifestConfig(group, resource, namespace, name)
	w.BeginObject()
	w.StringField("type", "WellKnownStatus")
	w.EndObject()
	w.EndArray()
	w.EndObject()
	return w.Bytes()
}

// JSONPaths returns a manifestConfig asking the work agent for the given JSONPath
// feedback values of one resource.
func JSONPaths(group, resource, namespace, name string, paths ...JSONPath) abi.RawJSON {
	w := manifestConfig(group, resource, namespace, name)
	w.BeginObject()
	w.StringField("type", "JSONPaths")
	w.Key("jsonPaths")
	w.BeginArray()
	for _, p := range paths {
		w.BeginObject()
		w.StringField("name", p.Name)
		w.StringField("path", p.Path)
		w.EndObject()
	}
	w.EndArray()
	w.EndObject()
	w.EndArray()
	w.EndObject()
	return w.Bytes()
}

// manifestConfig writes {"resourceIdentifier":{…},"feedbackRules":[ and leaves the
// array open.
func manifestConfig(group, resource, namespace, name string) *jsonlite.Writer {
	w := jsonlite.NewWriter(nil)
	w.BeginObject()
	w.Key("resourceIdentifier")
	w.BeginObject()
	w.StringField("group", group)
	w.StringField("resource", resource)
	w.StringField("name", name)
	w.StringField("namespace", namespace)
	w.EndObject()
	w.Key("feedbackRules")
	w.BeginArray()
	return w
}

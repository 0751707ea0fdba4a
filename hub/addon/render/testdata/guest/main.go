// Command guest is an AddOnTemplate plugin for hub/addon/render's tests: the
// request's variable MODE selects a behaviour; LOCATION, when set, is the Deployment's
// hosted-manifest-location annotation.
package main

import (
	"errors"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/addontemplate"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

type guest struct{}

func init() { addontemplate.Register(guest{}) }

func main() {}

var sink int

func (guest) RenderAddOn(_ sdk.Host, req *abi.AddOnRequest) (abi.AddOnResult, error) {
	ns := req.InstallNamespace
	switch req.Variables["MODE"] {
	case "error":
		return abi.AddOnResult{}, errors.New("refusing cluster " + req.ClusterName)
	case "panic":
		var m map[string]int
		m["x"] = 1
	case "loop":
		for i := 0; ; i++ {
			sink += i
		}
	case "no-namespace":
		ns = ""
	}
	// A ConfigMap echoing the request, and a Deployment.
	cm := jsonlite.NewWriter(nil)
	cm.BeginObject()
	cm.StringField("apiVersion", "v1")
	cm.StringField("kind", "ConfigMap")
	cm.Key("metadata")
	cm.BeginObject()
	cm.StringField("name", req.AddOnName+"-request")
	cm.StringField("namespace", req.InstallNamespace)
	cm.EndObject()
	cm.Key("data")
	cm.BeginObject()
	cm.StringField("request", string(req.AppendJSON(nil)))
	cm.EndObject()
	cm.EndObject()

	d := jsonlite.NewWriter(nil)
	d.BeginObject()
	d.StringField("apiVersion", "apps/v1")
	d.StringField("kind", "Deployment")
	d.Key("metadata")
	d.BeginObject()
	d.StringField("name", req.AddOnName+"-agent")
	if ns != "" {
		d.StringField("namespace", ns)
	}
	// LOCATION places the Deployment in hosted mode (the hub keeps the annotation).
	if loc := req.Variables["LOCATION"]; loc != "" {
		d.Key("annotations")
		d.BeginObject()
		d.StringField("addon.open-cluster-management.io/hosted-manifest-location", loc)
		d.EndObject()
	}
	d.EndObject()
	d.Key("spec")
	d.BeginObject()
	d.Key("template")
	d.BeginObject()
	d.Key("spec")
	d.BeginObject()
	d.Key("containers")
	d.BeginArray()
	d.BeginObject()
	d.StringField("name", "agent")
	d.StringField("image", "quay.io/open-cluster-management/agent:v1")
	d.EndObject()
	d.EndArray()
	d.EndObject()
	d.EndObject()
	d.EndObject()
	d.EndObject()
	return abi.AddOnResult{
		Manifests:       []abi.RawJSON{cm.Bytes(), d.Bytes()},
		ManifestConfigs: []abi.RawJSON{addontemplate.WellKnownStatus("", "configmaps", req.InstallNamespace, req.AddOnName+"-request")},
	}, nil
}

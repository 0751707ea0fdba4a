// Command addon-configmap is an example AddOnTemplate: it renders a ConfigMap and
// a Deployment for an add-on's agent, filling them from the request's variables
// and its AddOnDeploymentConfig-style config ({"replicas": N}), with jsonlite.
package main

import (
	"errors"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/addontemplate"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

type template struct{}

func init() { addontemplate.Register(template{}) }

func main() {}

func (template) RenderAddOn(_ sdk.Host, req *abi.AddOnRequest) (abi.AddOnResult, error) {
	image := req.Variables["image"]
	if image == "" {
		return abi.AddOnResult{}, errors.New("variables.image: must be set")
	}
	replicas := int64(1)
	if raw, ok, err := jsonlite.Lookup(req.Config, "replicas"); err != nil {
		return abi.AddOnResult{}, errors.New("config: " + err.Error())
	} else if ok {
		if replicas, err = jsonlite.NewReader(raw).Int(); err != nil || replicas < 0 {
			return abi.AddOnResult{}, errors.New("config.replicas: must be a non-negative integer")
		}
	}
	name := req.AddOnName + "-agent"

	cm := jsonlite.NewWriter(nil)
	cm.BeginObject()
	cm.StringField("apiVersion", "v1")
	cm.StringField("kind", "ConfigMap")
	metadata(cm, name, req.InstallNamespace)
	cm.Key("data")
	cm.BeginObject()
	cm.StringField("clusterName", req.ClusterName)
	cm.EndObject()
	cm.EndObject()

	d := jsonlite.NewWriter(nil)
	d.BeginObject()
	d.StringField("apiVersion", "apps/v1")
	d.StringField("kind", "Deployment")
	metadata(d, name, req.InstallNamespace)
	d.Key("spec")
	d.BeginObject()
	d.IntField("replicas", replicas)
	d.Key("selector")
	d.BeginObject()
	d.Key("matchLabels")
	d.BeginObject()
	d.StringField("app", name)
	d.EndObject()
	d.EndObject()
	d.Key("template")
	d.BeginObject()
	d.Key("metadata")
	d.BeginObject()
	d.Key("labels")
	d.BeginObject()
	d.StringField("app", name)
	d.EndObject()
	d.EndObject()
	d.Key("spec")
	d.BeginObject()
	d.Key("containers")
	d.BeginArray()
	d.BeginObject()
	d.StringField("name", "agent")
	d.StringField("image", image)
	d.EndObject()
	d.EndArray()
	d.EndObject()
	d.EndObject()
	d.EndObject()
	d.EndObject()
	return abi.AddOnResult{Manifests: []abi.RawJSON{cm.Bytes(), d.Bytes()}}, nil
}

func metadata(w *jsonlite.Writer, name, namespace string) {
	w.Key("metadata")
	w.BeginObject()
	w.StringField("name", name)
	w.StringField("namespace", namespace)
	w.EndObject()
}

package addontemplate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/addontemplate"
)

func strict(t *testing.T, raw []byte) workv1.ManifestConfigOption {
	t.Helper()
	var mc workv1.ManifestConfigOption
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&mc); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return mc
}

func TestManifestConfigHelpers(t *testing.T) {
	id := workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "agents", Name: "a"}
	got := strict(t, addontemplate.WellKnownStatus("apps", "deployments", "agents", "a"))
	want := workv1.ManifestConfigOption{ResourceIdentifier: id, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WellKnownStatus: %+v", got)
	}
	got = strict(t, addontemplate.JSONPaths("apps", "deployments", "agents", "a", addontemplate.JSONPath{Name: "gen", Path: ".status.observedGeneration"}))
	want = workv1.ManifestConfigOption{ResourceIdentifier: id, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType,
		JsonPaths: []workv1.JsonPath{{Name: "gen", Path: ".status.observedGeneration"}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSONPaths: %+v", got)
	}
	res := abi.AddOnResult{Manifests: []abi.RawJSON{}, ManifestConfigs: []abi.RawJSON{addontemplate.WellKnownStatus("", "pods", "", "p")}}
	if err := res.Validate(); err != nil {
		t.Error(err)
	}
}

type fixed struct {
	res abi.AddOnResult
	err error
	got *abi.AddOnRequest
}

func (f *fixed) RenderAddOn(_ sdk.Host, req *abi.AddOnRequest) (abi.AddOnResult, error) {
	f.got = req
	return f.res, f.err
}

func TestRender(t *testing.T) {
	req := abi.AddOnRequest{AddOnName: "a", Cluster: &abi.AddOnCluster{Name: "c1", Allocatable: map[string]int64{"cpu": 2000}}}
	p := &fixed{res: abi.AddOnResult{Manifests: []abi.RawJSON{abi.RawJSON(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}
	out, err := addontemplate.Render(p, nil, req.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := p.got.Allocatable("cpu"); v != 2000 {
		t.Errorf("plugin saw %+v", p.got.Cluster)
	}
	if string(out) != `{"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]}` {
		t.Errorf("output %s", out)
	}

	p.res.ManifestConfigs = []abi.RawJSON{abi.RawJSON(`{"resourceIdentifier":{"resource":"configmaps"}}`)}
	if _, err := addontemplate.Render(p, nil, req.AppendJSON(nil)); err == nil || !strings.Contains(err.Error(), "manifestConfigs[0].resourceIdentifier.name: must be set") {
		t.Errorf("invalid answer: %v", err)
	}
	p.err = errors.New("no")
	if _, err := addontemplate.Render(p, nil, req.AppendJSON(nil)); err == nil || err.Error() != "no" {
		t.Errorf("plugin error: %v", err)
	}
	if _, err := addontemplate.Render(p, nil, []byte(`[]`)); err == nil {
		t.Error("bad input accepted")
	}
}

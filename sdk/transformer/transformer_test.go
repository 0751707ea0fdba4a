package transformer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/sdktest"
	"github.com/flotilla-dev/flotilla/sdk/transformer"
)

type labeler struct{}

func (labeler) TransformManifest(_ sdk.Host, req *abi.TransformRequest) (abi.TransformResult, error) {
	if req.Cluster.Name == "" {
		return abi.TransformResult{}, errors.New("no cluster")
	}
	return transformer.Patch(transformer.Add("/metadata/labels/"+transformer.EscapePointer("example.com/cluster"), []byte(`"`+req.Cluster.Name+`"`))), nil
}

// counter answers something new on every call: the SDK's tests must catch it.
type counter struct{ n *int }

func (c counter) TransformManifest(sdk.Host, *abi.TransformRequest) (abi.TransformResult, error) {
	*c.n++
	return transformer.Manifest([]byte(`{"kind":"ConfigMap","data":{"n":"` + strings.Repeat("x", *c.n) + `"}}`)), nil
}

type bad struct{}

func (bad) TransformManifest(sdk.Host, *abi.TransformRequest) (abi.TransformResult, error) {
	return abi.TransformResult{Manifest: abi.RawJSON(`{}`), Patch: []abi.PatchOp{}}, nil
}

func TestTransform(t *testing.T) {
	req := abi.TransformRequest{Cluster: abi.TransformCluster{Name: "cluster1"}, Manifest: abi.RawJSON(`{"kind":"ConfigMap"}`)}
	res, err := sdktest.Transform(labeler{}, sdktest.NewHost(""), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.AppendJSON(nil)); got != `{"patch":[{"op":"add","path":"/metadata/labels/example.com~1cluster","value":"cluster1"}]}` {
		t.Errorf("got %s", got)
	}
	if _, err := sdktest.Transform(labeler{}, sdktest.NewHost(""), abi.TransformRequest{}); err == nil || err.Error() != "no cluster" {
		t.Errorf("a plugin error: %v", err)
	}
	n := 0
	if _, err := sdktest.Transform(counter{&n}, sdktest.NewHost(""), req); err == nil || !strings.Contains(err.Error(), "answered the same request differently") {
		t.Errorf("a nondeterministic plugin: %v", err)
	}
	if _, err := sdktest.Transform(bad{}, sdktest.NewHost(""), req); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("an invalid result: %v", err)
	}
}

func TestBuilders(t *testing.T) {
	empty := transformer.Patch()
	if got := string(empty.AppendJSON(nil)); got != `{"patch":[]}` {
		t.Errorf("Patch(): %s", got)
	}
	if got := transformer.EscapePointer("a~b/c"); got != "a~0b~1c" {
		t.Errorf("EscapePointer: %s", got)
	}
	if got := transformer.SortedKeys(map[string]int{"b": 1, "a": 2, "c": 3}); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("SortedKeys: %v", got)
	}
	if got := string(transformer.Remove("/a").Op + transformer.Replace("/a", []byte("1")).Op); got != "removereplace" {
		t.Errorf("ops: %s", got)
	}
}

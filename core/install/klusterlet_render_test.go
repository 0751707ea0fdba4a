package install_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/install"
)

// singletonGolden are renders of the klusterlet chart (render components, mode Singleton)
// recorded before the chart learnt its other modes and the operator render (regenerate only
// on purpose: FLOTILLA_UPDATE_GOLDEN=1).
var singletonGolden = []struct {
	file   string
	values func() map[string]any
}{
	{"klusterlet-singleton-defaults.yaml", func() map[string]any { return map[string]any{"clusterName": "cluster1"} }},
	{"klusterlet-singleton-values.yaml", nonDefaultKlusterlet},
}

// TestKlusterletSingletonRenderUnchanged: the default mode (Singleton, render components)
// renders exactly the objects it rendered before the other modes existed, object for object
// and in the same order (the CRDs aside).
func TestKlusterletSingletonRenderUnchanged(t *testing.T) {
	for _, g := range singletonGolden {
		t.Run(g.file, func(t *testing.T) {
			// The CRDs are TestChartCRDsAreCurrent's.
			var objs []*unstructured.Unstructured
			for _, o := range render(t, install.KlusterletChart, klusterletRelease, install.AgentNamespace, g.values()) {
				if o.GetKind() != "CustomResourceDefinition" {
					objs = append(objs, o)
				}
			}
			path := filepath.Join("testdata", g.file)
			if os.Getenv("FLOTILLA_UPDATE_GOLDEN") == "1" {
				var buf bytes.Buffer
				if err := install.WriteYAML(&buf, objs); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []*unstructured.Unstructured
			for _, doc := range bytes.Split(data, []byte("\n---\n")) {
				var m map[string]any
				if err := yaml.Unmarshal(doc, &m); err != nil {
					t.Fatal(err)
				}
				if m != nil {
					want = append(want, &unstructured.Unstructured{Object: m})
				}
			}
			if len(objs) != len(want) {
				t.Errorf("%d objects, want %d:\n%s", len(objs), len(want), summary(objs))
			}
			for i := range min(len(objs), len(want)) {
				got, w := objs[i], want[i]
				if describeObj(got) != describeObj(w) {
					t.Errorf("object %d is %s, want %s", i, describeObj(got), describeObj(w))
					continue
				}
				gj, _ := yaml.Marshal(got.Object)
				var gm map[string]any
				_ = yaml.Unmarshal(gj, &gm)
				if !reflect.DeepEqual(gm, w.Object) {
					wj, _ := yaml.Marshal(w.Object)
					t.Errorf("%s differs:\n got: %s\nwant: %s", describeObj(got), gj, wj)
				}
			}
		})
	}
}

func describeObj(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

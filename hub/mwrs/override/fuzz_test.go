package override

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// The seeds run in every `go test`; `go test -fuzz FuzzJSONPatch ./hub/mwrs/override/` (and
// the others) explores further. Each fuzz target checks what the controller relies on: no
// panic, a failure or a result within the caps, and the manifest's identity kept.

// fuzzRender compiles spec (skipping what Compile refuses, as the webhook and the controller
// do) and renders it on manifest; it checks the invariants of a result.
func fuzzRender(t *testing.T, manifest []byte, spec *flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec) {
	p, errs := Compile("fuzz", spec, field.NewPath("spec"))
	if len(errs) > 0 {
		return
	}
	tmpl := &workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}}}
	res, f := Render(context.Background(), Input{ReplicaSet: rs, Template: tmpl, Overrides: []*Program{p}, Cluster: eu})
	if f != nil {
		if f.Cluster != "cluster1" || f.Override != "fuzz" || len(f.Message) > 1024 {
			t.Fatalf("failure %+v", f)
		}
		return
	}
	raw := res.Spec.Workload.Manifests[0].Raw
	if len(raw) > MaxManifestBytes {
		t.Fatalf("result of %d bytes", len(raw))
	}
	if string(raw) == string(manifest) {
		return
	}
	before, err := decode(manifest)
	if err != nil {
		t.Fatalf("a manifest that does not decode was changed: %v", err)
	}
	after, err := decode(raw)
	if err != nil {
		t.Fatalf("result does not decode: %v", err)
	}
	if identityOf(before) != identityOf(after) {
		t.Fatalf("identity changed: %s", identityOf(before).diff(identityOf(after)))
	}
}

func FuzzJSONPatch(f *testing.F) {
	f.Add([]byte(deployment), "replace", "/spec/replicas", "", `3`, "")
	f.Add([]byte(deployment), "add", "/metadata/labels/a~1b", "", `"x"`, "")
	f.Add([]byte(deployment), "add", "/spec/template/spec/containers/-", "", `{"name":"x"}`, "")
	f.Add([]byte(deployment), "remove", "/spec/template/spec/containers/5", "", ``, "")
	f.Add([]byte(deployment), "move", "/metadata/labels", "/metadata/annotations", ``, "")
	f.Add([]byte(deployment), "copy", "/spec/template/spec/containers/0", "/spec", ``, "")
	f.Add([]byte(deployment), "replace", "/kind", "", `"Job"`, "")
	f.Add([]byte(configMap), "add", "/data/x", "", ``, `{{ .cluster.name }}`)
	f.Add([]byte(configMap), "test", "/data/plain", "", `"x<y"`, "")
	f.Add([]byte(`[]`), "add", "", "", `{}`, "")
	f.Add([]byte(`{"kind":1}`), "replace", "/kind", "", `null`, "")
	f.Add([]byte(`{`), "add", "/a", "", `1`, "")
	f.Fuzz(func(t *testing.T, manifest []byte, op, path, from, value, valueTemplate string) {
		o := flotillav1alpha1.JSONPatchOperation{Op: op, Path: path, From: from, ValueTemplate: valueTemplate}
		if value != "" {
			o.Value = &apiextensionsv1.JSON{Raw: []byte(value)}
		}
		fuzzRender(t, manifest, &flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{
			ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "web"}},
			Rules:       []flotillav1alpha1.OverrideRule{{Name: "r", JSONPatch: []flotillav1alpha1.JSONPatchOperation{o}}},
		})
	})
}

func FuzzMergePatch(f *testing.F) {
	f.Add([]byte(deployment), `{"spec":{"replicas":2}}`)
	f.Add([]byte(deployment), `{"metadata":{"name":"other"}}`)
	f.Add([]byte(deployment), `{"metadata":null}`)
	f.Add([]byte(configMap), `{"data":{"greeting":null,"x":"{{ .cluster.name }}"}}`)
	f.Add([]byte(configMap), `{"data":{"x":"{{ range . }}"}}`)
	f.Add([]byte(configMap), `{"kind":"Secret"}`)
	f.Add([]byte(`{"a":[1,2]}`), `{"a":{"b":[{}]}}`)
	f.Fuzz(func(t *testing.T, manifest []byte, patch string) {
		fuzzRender(t, manifest, &flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{
			ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "web"}},
			Rules:       []flotillav1alpha1.OverrideRule{{Name: "r", MergePatch: &apiextensionsv1.JSON{Raw: []byte(patch)}}},
		})
	})
}

// FuzzRule drives the overriders whose inputs are strings: image components, labels,
// replicas and env templates, and expandTemplates over the manifest's own strings.
func FuzzRule(f *testing.F) {
	f.Add([]byte(deployment), "eu.example.com", "{{ .cluster.name }}", "{{ index .cluster.claims \"replicas\" }}", "a/b")
	f.Add([]byte(deployment), "", "v{{ add 1 2 }}", "{{ div 1 0 }}", "")
	f.Add([]byte(configMap), "localhost:5000", "{{ .x.y }}", "-1", "@")
	f.Add([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"a@b:c/d"}]}}`), "r", "", "1", "x:y@z")
	f.Fuzz(func(t *testing.T, manifest []byte, registry, tag, replicas, key string) {
		for _, r := range []flotillav1alpha1.OverrideRule{
			{Name: "image", Image: &flotillav1alpha1.ImageOverride{Registry: registry, Tag: tag}},
			{Name: "labels", Labels: &flotillav1alpha1.MetadataOverride{Set: map[string]string{key: tag}, Remove: []string{registry}}},
			{Name: "replicas", Replicas: &flotillav1alpha1.ReplicasOverride{Template: replicas}},
			{Name: "env", Env: &flotillav1alpha1.EnvOverride{Set: []flotillav1alpha1.EnvValue{{Name: key, Value: tag}}, Remove: []string{registry}}},
			{Name: "args", Args: &flotillav1alpha1.ContainerListOverride{Operation: flotillav1alpha1.ListAppend, Values: []string{registry, tag}}},
			{Name: "expand", ExpandTemplates: &flotillav1alpha1.ExpandTemplates{}},
		} {
			fuzzRender(t, manifest, &flotillav1alpha1.ManifestWorkReplicaSetOverrideSpec{
				ReplicaSets: []flotillav1alpha1.ReplicaSetReference{{Name: "web"}},
				Rules:       []flotillav1alpha1.OverrideRule{r},
			})
		}
	})
}

// FuzzTemplate: any source either is refused at parse or renders within the output cap.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		`{{ .cluster.name }}`, `{{ range . }}{{ end }}`, `{{ printf "%*d" 1000000000 1 }}`, `{{ define "a" }}{{ end }}`,
		`{{ $s := "xx" }}{{ $s = replace "x" "xxxxxxxx" $s }}{{ $s = replace "x" "xxxxxxxx" $s }}{{ $s }}`,
		`{{ mul 4611686018427387904 2 }}`, `{{ sub -9223372036854775807 2 }}`, `{{ index .cluster.labels "x" | required "no x" }}`,
		`{{ if .cluster }}{{ with .group }}{{ .index }}{{ end }}{{ end }}`, `{{ len .cluster.capacity }}`, `{{ index . 1 }}`,
		`{{ atoi "x" }}`, `{{ default 3 .cluster.labels.none }}`, `{{ nil }}`, `{{ .cluster.name.x }}`,
	} {
		f.Add(s)
	}
	values := Values(rs, eu)
	f.Fuzz(func(t *testing.T, src string) {
		tp, err := parseTemplate(src)
		if err != nil {
			return
		}
		out, err := tp.execute(values)
		if err == nil && len(out) > MaxTemplateOutput && strings.Contains(src, "{{") {
			t.Fatalf("output of %d bytes", len(out))
		}
	})
}

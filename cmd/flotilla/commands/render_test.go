package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
)

func TestRenderCommandHasHelp(t *testing.T) {
	out, _, err := flotilla(t.Context(), "render", "mwrs", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flotilla render mwrs default/web --cluster cluster1", "--diff", "status.digest", "0 same, 1 differs, 2 error"} {
		if !strings.Contains(out, want) {
			t.Errorf("render mwrs --help does not say %q:\n%s", want, out)
		}
	}
	// A usage error is exit status 2, as kubectl diff's.
	if _, _, err := flotilla(t.Context(), "render", "mwrs", "default/web"); ExitCode(err) != exitError {
		t.Errorf("render mwrs without --cluster: %v (exit %d), want exit %d", err, ExitCode(err), exitError)
	}
}

const (
	renderNS = "render"
	// renderTemplate is the replica set's template: one Deployment.
	renderMWRS = `
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {name: web, namespace: render}
spec:
  placementRefs: [{name: all, rolloutStrategy: {type: All}}]
  manifestWorkTemplate:
    workload:
      manifests:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: web}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: quay.io/acme/web:1.0}]}
`
	// renderOverride moves eu clusters to their region's registry and labels every manifest
	// with its cluster through the C example transformer.
	renderOverride = `
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: region, namespace: render}
spec:
  replicaSets: [{name: web}]
  rules:
  - name: eu
    clusters: {labelSelector: {matchLabels: {region: eu}}}
    image: {registry: eu.registry.example}
  - name: label
    transform: {plugin: render-cluster-label}
`
)

// TestRenderMWRS runs `flotilla render mwrs` against a real hub API server whose replica set
// controller and WasmPlugin loader run in-process (the hub's code, on a manager of the test):
// the render is the work the controller wrote; then, the controller stopped, --diff says
// same (0) and, after an override edit, differs (1); -f previews without writing; a cluster
// no placement selects, a failing rule and a plugin whose ConfigMap holds another module than
// the hub serves are errors (2).
func TestRenderMWRS(t *testing.T) {
	module, err := os.ReadFile(filepath.Join("..", "..", "..", "plugins", "examples", "c-cluster-label", "build", "cluster-label.wasm"))
	if err != nil {
		t.Fatalf("%v: build the C example first with `make plugins-examples`", err)
	}
	fleet := fleettest.StartT(t, environment.Options{})
	hubKC := fleet.Hub.KubeconfigPath
	c, _, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	create := func(obj client.Object, doc string) {
		t.Helper()
		if doc != "" {
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("decoding %T: %v", obj, err)
			}
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	for _, ns := range []string{renderNS, "cluster-eu", "cluster-us", "cluster-x"} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, "")
	}
	for name, region := range map[string]string{"cluster-eu": "eu", "cluster-us": "us", "cluster-x": "eu"} {
		create(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}}}, "")
	}
	// The placement decided cluster-eu and cluster-us (no placement controller runs here).
	create(&clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: renderNS, Name: "all"}}, "")
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: renderNS, Name: "all-decision-1",
		Labels: map[string]string{clusterv1beta1.PlacementLabel: "all", clusterv1beta1.DecisionGroupIndexLabel: "0"}}}
	create(pd, "")
	pd.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: "cluster-eu"}, {ClusterName: "cluster-us"}}
	if err := c.Status().Update(ctx, pd); err != nil {
		t.Fatalf("writing the decisions: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: renderNS, Name: "cluster-label"},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasm: module}}
	create(cm, "")
	create(&flotillav1alpha1.WasmPlugin{ObjectMeta: metav1.ObjectMeta{Name: "render-cluster-label"}, Spec: flotillav1alpha1.WasmPluginSpec{
		Type:   flotillav1alpha1.PluginTypeManifestTransformer,
		Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{Namespace: renderNS, Name: "cluster-label"}}}}, "")

	// The hub's WasmPlugin loader and replica set controller.
	stopHub := startRenderHub(t, fleet.Hub.KubeconfigPath)
	renderWait(t, 2*time.Minute, "WasmPlugin render-cluster-label Ready with a status.digest", func() (bool, error) {
		wp := &flotillav1alpha1.WasmPlugin{}
		if err := c.Get(ctx, client.ObjectKey{Name: "render-cluster-label"}, wp); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(wp.Status.Conditions, flotillav1alpha1.ConditionReady) && wp.Status.Digest != "", nil
	})
	create(&workv1alpha1.ManifestWorkReplicaSet{}, renderMWRS)
	ovr := &flotillav1alpha1.ManifestWorkReplicaSetOverride{}
	create(ovr, renderOverride)

	run := func(args ...string) (string, error) {
		out, _, err := flotilla(ctx, append(args, "--kubeconfig", hubKC)...)
		return out, err
	}
	// rendered runs `render mwrs -o json` and returns the header and the work.
	rendered := func(cluster string, extra ...string) (string, *workv1.ManifestWork) {
		t.Helper()
		out, err := run(append([]string{"render", "mwrs", "render/web", "--cluster", cluster, "-o", "json"}, extra...)...)
		if err != nil {
			t.Fatalf("render mwrs --cluster %s %v: %v\n%s", cluster, extra, err, out)
		}
		header, body, _ := strings.Cut(out, "\n{")
		w := &workv1.ManifestWork{}
		if err := json.Unmarshal([]byte("{"+body), w); err != nil {
			t.Fatalf("render mwrs --cluster %s printed no ManifestWork: %v\n%s", cluster, err, out)
		}
		// Compact the indented manifests, to look for fields in them.
		for i, m := range w.Spec.Workload.Manifests {
			var b bytes.Buffer
			if err := json.Compact(&b, m.Raw); err != nil {
				t.Fatal(err)
			}
			w.Spec.Workload.Manifests[i].Raw = b.Bytes()
		}
		return header, w
	}

	// The render is the work the controller wrote: same hash, annotations, labels, manifests.
	var written *workv1.ManifestWork
	renderWait(t, 2*time.Minute, "the controller to write cluster-eu's work with the render's template-hash", func() (bool, error) {
		_, w := rendered("cluster-eu")
		written = &workv1.ManifestWork{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "cluster-eu", Name: "web"}, written); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return written.Annotations[mwrs.TemplateHashAnnotation] == w.Annotations[mwrs.TemplateHashAnnotation], nil
	})
	header, w := rendered("cluster-eu")
	for _, want := range []string{"for cluster cluster-eu (placement all, group 0)", "revision " + written.Annotations[mwrs.RevisionAnnotation],
		"template-hash " + written.Annotations[mwrs.TemplateHashAnnotation], "region/eu", "image", "apps/Deployment web/web", "region/label", "transform"} {
		if !strings.Contains(header, want) {
			t.Errorf("the header does not say %q:\n%s", want, header)
		}
	}
	for _, k := range []string{mwrs.TemplateHashAnnotation, mwrs.RevisionAnnotation, mwrs.OverridesAnnotation, mwrs.RenderInputsAnnotation} {
		if w.Annotations[k] != written.Annotations[k] {
			t.Errorf("annotation %s: rendered %q, the controller wrote %q", k, w.Annotations[k], written.Annotations[k])
		}
	}
	if want := "region/eu,region/label"; written.Annotations[mwrs.OverridesAnnotation] != want {
		t.Errorf("the controller's overrides annotation is %q, want %q", written.Annotations[mwrs.OverridesAnnotation], want)
	}
	if !reflect.DeepEqual(w.Labels, written.Labels) {
		t.Errorf("labels: rendered %v, the controller wrote %v", w.Labels, written.Labels)
	}
	if got, want := manifestObjects(t, w), manifestObjects(t, written); !reflect.DeepEqual(got, want) {
		t.Errorf("manifests: rendered %v, the controller wrote %v", got, want)
	}
	for _, want := range []string{`"image":"eu.registry.example/acme/web:1.0"`, `"example.flotilla.dev/cluster":"cluster-eu"`} {
		if !bytes.Contains(w.Spec.Workload.Manifests[0].Raw, []byte(want)) {
			t.Errorf("the rendered Deployment lacks %s: %s", want, w.Spec.Workload.Manifests[0].Raw)
		}
	}
	if _, w := rendered("cluster-us"); bytes.Contains(w.Spec.Workload.Manifests[0].Raw, []byte("eu.registry")) {
		t.Errorf("cluster-us got the eu registry: %s", w.Spec.Workload.Manifests[0].Raw)
	}
	// The default output is YAML, the work as applied: no status, no creation time.
	if out, err := run("render", "mwrs", "render/web", "--cluster", "cluster-eu"); err != nil || strings.Contains(out, "\nstatus:") ||
		strings.Contains(out, "creationTimestamp") || !strings.Contains(out, "\n    "+mwrs.TemplateHashAnnotation+": "+written.Annotations[mwrs.TemplateHashAnnotation]+"\n") {
		t.Errorf("render mwrs (YAML): %v; want the work's template-hash annotation and no status or creationTimestamp:\n%s", err, out)
	}
	// rollout status names the rules that shaped each work.
	if out, err := run("rollout", "status", "render/web"); err != nil || !strings.Contains(out, "SHAPED-BY") || !strings.Contains(out, "region/eu,region/label") {
		t.Errorf("rollout status (%v) shows no SHAPED-BY column with region/eu,region/label:\n%s", err, out)
	}

	// From here the works stay as they are.
	stopHub()

	out, err := run("render", "mwrs", "render/web", "--cluster", "cluster-eu", "--diff")
	if err != nil || !strings.Contains(out, "carries the rendered spec") || !strings.Contains(out, "rollout: Succeeded") && !strings.Contains(out, "rollout: Progressing") {
		t.Errorf("--diff of the work the controller wrote: %v (exit %d), want exit 0 and the rollout state:\n%s", err, ExitCode(err), out)
	}

	// An override edit the controller has not rolled out: the diff and exit 1.
	if err := c.Get(ctx, client.ObjectKeyFromObject(ovr), ovr); err != nil {
		t.Fatal(err)
	}
	ovr.Spec.Rules[0].Image.Registry = "eu2.registry.example"
	if err := c.Update(ctx, ovr); err != nil {
		t.Fatal(err)
	}
	out, err = run("render", "mwrs", "render/web", "--cluster", "cluster-eu", "--diff")
	if ExitCode(err) != exitDiffers {
		t.Errorf("--diff after an override edit: %v (exit %d), want exit %d\n%s", err, ExitCode(err), exitDiffers, out)
	}
	for _, want := range []string{"--- ManifestWork cluster-eu/web now (template-hash " + written.Annotations[mwrs.TemplateHashAnnotation] + ")",
		"+++ rendered (revision ", "eu2.registry.example", "rollout: ToApply"} {
		if !strings.Contains(out, want) {
			t.Errorf("--diff after an override edit does not print %q:\n%s", want, out)
		}
	}

	// -f previews a change without writing it: an edit of region and a new override.
	dir := t.TempDir()
	preview := filepath.Join(dir, "preview.yaml")
	workWriteFile(t, preview, strings.Replace(renderOverride, "eu.registry.example", "eu3.registry.example", 1)+`---
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: tier}
spec:
  replicaSets: [{name: web}]
  order: 5
  rules: [{name: gold, replicas: {value: 3}}]
`)
	before := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
	if err := c.List(ctx, before, client.InNamespace(renderNS)); err != nil {
		t.Fatal(err)
	}
	header, w = rendered("cluster-eu", "-f", preview)
	if raw := w.Spec.Workload.Manifests[0].Raw; !bytes.Contains(raw, []byte("eu3.registry.example")) || !bytes.Contains(raw, []byte(`"replicas":3`)) {
		t.Errorf("-f: the render does not use the files' overrides: %s", raw)
	}
	if !strings.Contains(header, "tier/gold") || !strings.Contains(header, "replicas") {
		t.Errorf("-f: the header does not name tier/gold:\n%s", header)
	}
	after := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
	if err := c.List(ctx, after, client.InNamespace(renderNS)); err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != len(before.Items) || after.Items[0].ResourceVersion != before.Items[0].ResourceVersion {
		t.Errorf("-f changed the hub's overrides: %d objects (resourceVersion %s), were %d (%s)",
			len(after.Items), after.Items[0].ResourceVersion, len(before.Items), before.Items[0].ResourceVersion)
	}

	// Errors, exit 2.
	failing := filepath.Join(dir, "failing.yaml")
	workWriteFile(t, failing, `
apiVersion: flotilla.dev/v1alpha1
kind: ManifestWorkReplicaSetOverride
metadata: {name: broken, namespace: render}
spec:
  replicaSets: [{name: web}]
  rules: [{name: missing-path, jsonPatch: [{op: replace, path: /spec/nope/x, value: 1}]}]
`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a cluster no placement selects", []string{"--cluster", "cluster-x"},
			[]string{"cluster cluster-x is not selected by the placements of ManifestWorkReplicaSet render/web (all)"}},
		{"a failing rule", []string{"--cluster", "cluster-eu", "-f", failing},
			[]string{"override broken rule missing-path on cluster cluster-eu manifest apps/Deployment web/web: "}},
		{"an unknown replica set", []string{"--cluster", "cluster-eu", "render/nope"}, []string{"ManifestWorkReplicaSet render/nope"}},
	} {
		args := append([]string{"render", "mwrs"}, tc.args...)
		if !strings.Contains(strings.Join(tc.args, " "), "render/") {
			args = append(args, "render/web")
		}
		out, err := run(args...)
		if ExitCode(err) != exitError {
			t.Errorf("%s: %v (exit %d), want exit %d\n%s", tc.name, err, ExitCode(err), exitError, out)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, want)
			}
		}
	}

	// The plugin's ConfigMap now holds another module than the hub serves: refused.
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	cm.BinaryData[flotillav1alpha1.SourceKeyWasm] = append(append([]byte(nil), module...), 0, 8, 3, 'n', 'e', 'w', 'a', 'b', 'c', 'd') // a custom section "new": a valid module, another digest
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	out, err = run("render", "mwrs", "render/web", "--cluster", "cluster-eu")
	if ExitCode(err) != exitError || !errors.Is(err, admin.ErrDigestMismatch) || !strings.Contains(err.Error(), "WasmPlugin render-cluster-label") {
		t.Errorf("a module that is not the one the hub serves: %v (exit %d), want exit %d naming WasmPlugin render-cluster-label and %q\n%s",
			err, ExitCode(err), exitError, admin.ErrDigestMismatch, out)
	}
	// rollout status still answers: the clusters that need the plugin say why they cannot be rendered here.
	out, err = run("rollout", "status", "render/web")
	if err != nil || !strings.Contains(out, "not rendered locally: WasmPlugin render-cluster-label: "+admin.ErrDigestMismatch.Error()) {
		t.Errorf("rollout status while a plugin's source is not the module the hub serves: %v\n%s", err, out)
	}
}

// startRenderHub runs the hub's WasmPlugin loader and replica set controller (as hub/manager
// wires them) on a manager of the test; the returned func stops it and waits.
func startRenderHub(t *testing.T, kubeconfig string) func() {
	t.Helper()
	cfg, err := loadRESTConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := manager.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	engine, err := wasm.NewEngine(ctx, wasm.EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registry := wasm.NewRegistry()
	if err := wasmplugin.SetupWithManager(mgr, engine, registry); err != nil {
		t.Fatal(err)
	}
	r := &mwrs.Reconciler{Client: mgr.GetClient(), CEL: &scheduler.CELMatcher{},
		Transformer: &override.WasmTransformer{Registry: registry, Reader: mgr.GetClient()}}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the test's hub manager: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the test's hub manager did not stop within a minute")
		}
		_ = engine.Close(context.Background())
	}
	t.Cleanup(stop)
	return stop
}

// renderWait polls cond every 200ms until it holds, failing the test after timeout with what it
// waited for.
func renderWait(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err != nil && !apierrors.IsNotFound(err) {
			last = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting %s for %s: %v (last error: %v)", timeout, what, err, last)
	}
}

// manifestObjects decodes a work's manifests (the API server may re-encode their bytes).
func manifestObjects(t *testing.T, w *workv1.ManifestWork) []any {
	t.Helper()
	var out []any
	for _, m := range w.Spec.Workload.Manifests {
		var v any
		if err := json.Unmarshal(m.Raw, &v); err != nil {
			t.Fatalf("ManifestWork %s/%s: manifest: %v", w.Namespace, w.Name, err)
		}
		out = append(out, v)
	}
	return out
}

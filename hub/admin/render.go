package admin

// `flotilla render mwrs`: one cluster's ManifestWork as the hub's ManifestWorkReplicaSet
// controller renders it (hub/mwrs.PreviewCluster, the controller's code), with the overrides
// of the hub and of local files, transform plugins loaded locally from their ConfigMaps.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	workv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/work/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/mwrs"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
	"github.com/flotilla-dev/flotilla/hub/placement/scheduler"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// RenderOptions select what RenderMWRS renders.
type RenderOptions struct {
	Namespace, Name, Cluster string
	// Overrides add to or replace (by name) the hub's overrides; nothing is written.
	Overrides []flotillav1alpha1.ManifestWorkReplicaSetOverride
	// Diff also reads the cluster's current work and its rollout state.
	Diff bool
	// Engine loads transform plugins (the hub's limits and determinism come with their
	// type); nil: NewEngine is called when a transform needs one.
	NewEngine func(ctx context.Context) (*wasm.Engine, error)
}

// Rendered is one cluster's render and, for a diff, what it has now.
type Rendered struct {
	ReplicaSet *workv1alpha1.ManifestWorkReplicaSet
	Preview    *mwrs.Preview
	// Current is the cluster's ManifestWork now (nil: none); State its rollout state, as
	// `flotilla rollout status` computes it with the hub's overrides.
	Current *workv1.ManifestWork
	State   *mwrs.ClusterRollout
	// Strategy is the rollout strategy of the placement the cluster is rendered for.
	Strategy string
	// InFlight is that placement's clusters Progressing now.
	InFlight int
	// WithFiles: the render used overrides from files (State does not).
	WithFiles bool
}

// ReadOverrides reads ManifestWorkReplicaSetOverrides from path (a file, a directory or
// StdinPath, as ReadManifests); any other kind, or an unknown field, is an error naming the
// file and the object.
func ReadOverrides(path string, stdin io.Reader) ([]flotillav1alpha1.ManifestWorkReplicaSetOverride, error) {
	ms, err := ReadManifests(path, stdin)
	if err != nil {
		return nil, err
	}
	var out []flotillav1alpha1.ManifestWorkReplicaSetOverride
	for i, m := range ms {
		var o flotillav1alpha1.ManifestWorkReplicaSetOverride
		dec := json.NewDecoder(bytes.NewReader(m.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return nil, fmt.Errorf("%s: object %d: %w", path, i+1, err)
		}
		if gvk := o.GroupVersionKind(); gvk.Group != flotillav1alpha1.GroupVersion.Group || gvk.Kind != "ManifestWorkReplicaSetOverride" {
			return nil, fmt.Errorf("%s: object %d (%s %s): not a ManifestWorkReplicaSetOverride (%s)", path, i+1, o.Kind, o.Name, flotillav1alpha1.GroupVersion)
		}
		out = append(out, o)
	}
	return out, nil
}

// RenderMWRS renders o.Cluster's work of replica set o.Namespace/o.Name. A cluster whose
// render fails is not an error: Preview.Failure says which rule failed.
func RenderMWRS(ctx context.Context, c client.Reader, o RenderOptions) (*Rendered, error) {
	rs := &workv1alpha1.ManifestWorkReplicaSet{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, rs); err != nil {
		return nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: %w", o.Namespace, o.Name, err)
	}
	ovs := slices.Clone(o.Overrides)
	for i := range ovs {
		if ovs[i].Namespace == "" {
			ovs[i].Namespace = rs.Namespace
		}
	}
	tr, closeEngine, err := localTransformer(ctx, c, rs, ovs, o.NewEngine, true)
	if err != nil {
		return nil, err
	}
	defer closeEngine()
	cel := &scheduler.CELMatcher{}
	popts := mwrs.PreviewOptions{CEL: cel, Transformer: tr, Overrides: ovs}
	if ps, ok := tr.(mwrs.PluginStates); ok {
		popts.Plugins = ps
	}
	p, err := mwrs.PreviewCluster(ctx, c, rs, o.Cluster, popts)
	if err != nil {
		return nil, err
	}
	out := &Rendered{ReplicaSet: rs, Preview: p, WithFiles: len(o.Overrides) > 0}
	if !o.Diff || p.Failure != nil {
		return out, nil
	}
	w := &workv1.ManifestWork{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Cluster, Name: rs.Name}, w); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("ManifestWork %s/%s: %w", o.Cluster, rs.Name, err)
	default:
		out.Current = w
	}
	prs, err := mwrs.Inspect(ctx, c, rs, time.Now(), cel, tr)
	if err != nil {
		return nil, err
	}
	for i, pr := range prs {
		if pr.Name != p.Placement {
			continue
		}
		out.Strategy = string(rs.Spec.PlacementRefs[i].RolloutStrategy.Type)
		if out.Strategy == "" {
			out.Strategy = "All"
		}
		out.InFlight = pr.Result.Counts.Progressing
		for j := range pr.Clusters {
			if pr.Clusters[j].Cluster == o.Cluster {
				out.State = &pr.Clusters[j]
			}
		}
		break
	}
	return out, nil
}

// LocalTransformer loads, as `flotilla rollout status` does, the transform plugins the
// overrides of rs name (localTransformer, not strict): a plugin that does not load fails only
// its transforms, with why. Call the returned func when done.
func LocalTransformer(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet) (override.Transformer, func(), error) {
	return localTransformer(ctx, c, rs, nil, nil, false)
}

// localTransformer loads the ManifestTransformer plugins the overrides of rs name into a
// local registry, each refused unless its ConfigMap's module is the one the hub serves
// (status.digest). No transform: a nil transformer and no engine. strict makes a plugin that
// does not load an error; otherwise its transforms fail with why (the clusters' renders then
// say so, as `rollout status` shows them).
func localTransformer(ctx context.Context, c client.Reader, rs *workv1alpha1.ManifestWorkReplicaSet, extra []flotillav1alpha1.ManifestWorkReplicaSetOverride,
	newEngine func(context.Context) (*wasm.Engine, error), strict bool) (override.Transformer, func(), error) {
	list := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
	if err := c.List(ctx, list, client.InNamespace(rs.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("ManifestWorkReplicaSet %s/%s: listing ManifestWorkReplicaSetOverrides: %w", rs.Namespace, rs.Name, err)
	}
	var plugins []string
	for _, o := range append(list.Items, extra...) {
		if !slices.ContainsFunc(o.Spec.ReplicaSets, func(r flotillav1alpha1.ReplicaSetReference) bool { return r.Name == rs.Name }) {
			continue
		}
		for _, r := range o.Spec.Rules {
			if r.Transform != nil && !slices.Contains(plugins, r.Transform.Plugin) {
				plugins = append(plugins, r.Transform.Plugin)
			}
		}
	}
	if len(plugins) == 0 {
		return nil, func() {}, nil
	}
	if newEngine == nil {
		newEngine = func(ctx context.Context) (*wasm.Engine, error) { return wasm.NewEngine(ctx, wasm.EngineOptions{}) }
	}
	engine, err := newEngine(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("wasm engine: %w", err)
	}
	closeEngine := func() { _ = engine.Close(context.WithoutCancel(ctx)) }
	reg := wasm.NewRegistry()
	slices.Sort(plugins)
	failed := map[string]error{}
	for _, name := range plugins {
		if err := loadTransform(ctx, c, engine, reg, name); err != nil {
			if strict || ctx.Err() != nil {
				closeEngine()
				return nil, nil, err
			}
			failed[name] = err
		}
	}
	return &unloaded{failed: failed, next: &override.WasmTransformer{Registry: reg}, states: mwrs.WasmPluginStates{Reader: c, Registry: reg}}, closeEngine, nil
}

// unloaded fails the transforms of the plugins that could not be loaded locally, with why.
// It is also the render's mwrs.PluginStates, so a preview's render-inputs name the digests
// of the modules it ran, as the controller's do.
type unloaded struct {
	failed map[string]error
	next   override.Transformer
	states mwrs.WasmPluginStates
}

func (u *unloaded) PluginState(ctx context.Context, name string) (string, bool, error) {
	if err := u.failed[name]; err != nil {
		return "", false, fmt.Errorf("not rendered locally: %w", err)
	}
	return u.states.PluginState(ctx, name)
}

func (u *unloaded) Transform(ctx context.Context, req override.TransformRequest) (json.RawMessage, error) {
	if err := u.failed[req.Plugin]; err != nil {
		return nil, fmt.Errorf("not rendered locally: %w", err)
	}
	return u.next.Transform(ctx, req)
}

// ErrDigestMismatch: a plugin's ConfigMap holds another module than the one the hub serves.
var ErrDigestMismatch = errors.New("the module in its source is not the one the hub serves")

func loadTransform(ctx context.Context, c client.Reader, engine *wasm.Engine, reg *wasm.Registry, name string) error {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		return fmt.Errorf("WasmPlugin %s: %w", name, err)
	}
	if wp.Spec.Type != flotillav1alpha1.PluginTypeManifestTransformer {
		return fmt.Errorf("WasmPlugin %s: spec.type is %s, not %s", name, wp.Spec.Type, flotillav1alpha1.PluginTypeManifestTransformer)
	}
	if wp.Status.Digest == "" {
		return fmt.Errorf("WasmPlugin %s: no status.digest: the hub has not loaded it (see its Ready condition)", name)
	}
	spec, _, lerr, err := wasmplugin.Resolve(ctx, c, engine, wp)
	if err != nil {
		return err
	}
	if lerr != nil {
		return fmt.Errorf("WasmPlugin %s: %w", name, lerr)
	}
	if d := wasm.Digest(spec.Wasm); d != wp.Status.Digest {
		return fmt.Errorf("WasmPlugin %s: %w: spec.source holds sha256 %s, status.digest is %s (wait until the hub loads it, then render again)",
			name, ErrDigestMismatch, d, wp.Status.Digest)
	}
	m, err := engine.Load(ctx, spec)
	if err != nil {
		return fmt.Errorf("WasmPlugin %s: %w", name, err)
	}
	if m.Type() != abi.TypeManifestTransformer {
		return fmt.Errorf("WasmPlugin %s: the module is of type %s, not %s", name, m.Type(), abi.TypeManifestTransformer)
	}
	return reg.Set(ctx, m)
}

// WriteRendered prints the render: a comment header (cluster, placement, group, revision,
// template hash, one line per rule that changed the work), then the work in output (yaml or
// json). A failed render prints the header and the failure and returns it.
func WriteRendered(w io.Writer, r *Rendered, output string) error {
	writeRenderHeader(w, r)
	if f := r.Preview.Failure; f != nil {
		return f
	}
	// The work as the controller applies it: no status, no creation time.
	raw, err := json.Marshal(r.Preview.Work)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	switch output {
	case "", "yaml":
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "json":
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return fmt.Errorf("-o %s: want yaml or json", output)
}

func writeRenderHeader(w io.Writer, r *Rendered) {
	p := r.Preview
	group := strings.TrimSpace(fmt.Sprintf("%d %s", p.Group.Index, p.Group.Name))
	fmt.Fprintf(w, "# ManifestWorkReplicaSet %s/%s for cluster %s (placement %s, group %s)\n", r.ReplicaSet.Namespace, r.ReplicaSet.Name, p.Cluster, p.Placement, group)
	if p.Failure != nil {
		fmt.Fprintf(w, "# revision %s: render failed, the cluster keeps its ManifestWork\n", p.Revision)
		return
	}
	fmt.Fprintf(w, "# revision %s, template-hash %s\n", p.Revision, p.TemplateHash)
	switch {
	case !p.Overridden:
		fmt.Fprintln(w, "# no ManifestWorkReplicaSetOverride names it: the template as written")
	case len(p.Trace) == 0:
		fmt.Fprintln(w, "# no override rule changes this cluster's work")
	default:
		fmt.Fprintln(w, "# rules that changed it, in order:")
		for _, t := range p.Trace {
			fmt.Fprintf(w, "#   %-24s %-15s %s\n", t.Override+"/"+t.Rule, t.Overrider, strings.Join(t.Changed, ", "))
		}
	}
}

// WriteRenderDiff prints a unified diff of the current work's spec against the rendered one
// and the cluster's rollout state; it reports whether they differ.
func WriteRenderDiff(w io.Writer, r *Rendered) (bool, error) {
	p := r.Preview
	if f := p.Failure; f != nil {
		writeRenderHeader(w, r)
		return false, f
	}
	to, err := yaml.Marshal(p.Work.Spec)
	if err != nil {
		return false, err
	}
	var from []byte
	fromName := fmt.Sprintf("ManifestWork %s/%s (no ManifestWork)", p.Cluster, p.Work.Name)
	if cur := r.Current; cur != nil {
		if from, err = yaml.Marshal(cur.Spec); err != nil {
			return false, err
		}
		h := cur.Annotations[mwrs.TemplateHashAnnotation]
		if h == "" {
			h = "none"
		}
		fromName = fmt.Sprintf("ManifestWork %s/%s now (template-hash %s)", p.Cluster, p.Work.Name, h)
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(from)), B: difflib.SplitLines(string(to)),
		FromFile: fromName, ToFile: fmt.Sprintf("rendered (revision %s, template-hash %s)", p.Revision, p.TemplateHash), Context: 3,
	})
	if err != nil {
		return false, err
	}
	differs := diff != ""
	if differs {
		fmt.Fprint(w, diff)
	} else {
		fmt.Fprintf(w, "ManifestWork %s/%s carries the rendered spec (template-hash %s)\n", p.Cluster, p.Work.Name, p.TemplateHash)
	}
	if s := r.State; s != nil {
		with := ""
		if r.WithFiles {
			with = ", with the hub's overrides, not the files'"
		}
		fmt.Fprintf(w, "rollout: %s: %s (placement %s, %s, %d in flight%s)\n", s.State, s.Why, p.Placement, r.Strategy, r.InFlight, with)
	}
	return differs, nil
}

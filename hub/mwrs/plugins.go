package mwrs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/hash"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/hub/mwrs/override"
)

const (
	// RenderInputsAnnotation on a generated work (with overrides) is the short hash of what its
	// render read: the render engine's version, the revision (template and ordered override
	// specs), the cluster facts, placement and decision group, and the transform plugins'
	// digests. The same inputs must render the same hash, else the render is not deterministic.
	RenderInputsAnnotation = "work.flotilla.dev/render-inputs"
	// renderEngineVersion is part of every render's inputs: bump it when a Flotilla change
	// alters what a render makes of the same inputs (else the determinism check fails them).
	renderEngineVersion = "1"

	// defaultPluginRetry is how soon a replica set waiting for a transform plugin is
	// reconciled again (the WasmPlugin watch usually comes first).
	defaultPluginRetry = 2 * time.Second

	// pluginIndex indexes overrides by the WasmPlugins their transform rules name.
	pluginIndex = "flotilla.dev/mwrso-plugin"
)

// PluginStates says whether a transform rule's WasmPlugin serves its current spec, and the
// digest of the module it serves. An error is a plugin that cannot serve (missing, of another
// type, failed to load): renders that call it fail.
type PluginStates interface {
	PluginState(ctx context.Context, name string) (digest string, serving bool, err error)
}

// WasmPluginStates reads plugin states from the WasmPlugins and the hub's registry.
type WasmPluginStates struct {
	Reader   client.Reader
	Registry *wasm.Registry
}

// PluginState is wasmplugin.ServedDigest for a ManifestTransformer.
func (s WasmPluginStates) PluginState(ctx context.Context, name string) (string, bool, error) {
	return wasmplugin.ServedDigest(ctx, s.Reader, s.Registry, name, flotillav1alpha1.PluginTypeManifestTransformer)
}

// transformPlugins are the WasmPlugins the transform rules of ovs name, sorted.
func transformPlugins(specs []overrideSnapshot) []string {
	var out []string
	for _, o := range specs {
		for _, r := range o.Spec.Rules {
			if r.Transform != nil && r.Transform.Plugin != "" && !slices.Contains(out, r.Transform.Plugin) {
				out = append(out, r.Transform.Plugin)
			}
		}
	}
	sort.Strings(out)
	return out
}

// pluginsOfOverride is pluginIndex's function.
func pluginsOfOverride(o client.Object) []string {
	ov := o.(*flotillav1alpha1.ManifestWorkReplicaSetOverride)
	return transformPlugins([]overrideSnapshot{{Spec: ov.Spec}})
}

// pluginState is one plugin's state for a render.
type pluginState struct {
	digest  string
	serving bool
	err     error
}

// errWaitingForPlugin is a transform call of a plugin that is loading.
var errWaitingForPlugin = errors.New("is loading its current spec")

// pluginGate is the render's Transformer: it calls only plugins that serve their current
// spec (as read once for the whole render, so every cluster sees the same plugins), and
// records the clusters that called one still loading: those wait, they do not fail.
type pluginGate struct {
	next   override.Transformer
	states map[string]pluginState

	mu      sync.Mutex
	waiting map[string]string // cluster → plugin
}

func (g *pluginGate) Transform(ctx context.Context, req override.TransformRequest) (json.RawMessage, error) {
	if s, ok := g.states[req.Plugin]; ok {
		if s.err != nil {
			return nil, s.err
		}
		if !s.serving {
			g.wait(req, req.Plugin)
			return nil, fmt.Errorf("WasmPlugin %s %w", req.Plugin, errWaitingForPlugin)
		}
	}
	out, err := g.next.Transform(ctx, req)
	if errors.Is(err, override.ErrPluginNotServing) {
		g.wait(req, req.Plugin) // it started loading since the render read its state
	}
	return out, err
}

func (g *pluginGate) wait(req override.TransformRequest, plugin string) {
	cl, _ := req.Values["cluster"].(map[string]any)
	name, _ := cl["name"].(string)
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.waiting[name]; !ok {
		g.waiting[name] = plugin
	}
}

// readPluginStates reads the state of every plugin d's transform rules name.
func readPluginStates(ctx context.Context, ps PluginStates, names []string) map[string]pluginState {
	out := make(map[string]pluginState, len(names))
	for _, n := range names {
		if ps == nil {
			out[n] = pluginState{serving: true} // no check: the transformer's own
			continue
		}
		d, ok, err := ps.PluginState(ctx, n)
		out[n] = pluginState{digest: d, serving: ok, err: err}
	}
	return out
}

// inputsOf is the render-inputs key of one cluster (RenderInputsAnnotation).
func (d *desired) inputsOf(rs types.NamespacedName, cl override.Cluster, states map[string]pluginState) (string, error) {
	type plugin struct {
		Name   string `json:"name"`
		Digest string `json:"digest"`
	}
	key := struct {
		Engine   string         `json:"engine"`
		Revision string         `json:"revision"`
		Facts    map[string]any `json:"facts"`
		// Object is what a celSelector may read beyond the facts: the whole cluster.
		Object  any      `json:"object,omitempty"`
		Plugins []plugin `json:"plugins,omitempty"`
	}{Engine: renderEngineVersion, Revision: d.rev, Facts: override.Values(rs, cl)}
	if d.usesCEL {
		mc := cl.Cluster
		key.Object = map[string]any{"labels": mc.Labels, "annotations": mc.Annotations, "spec": mc.Spec, "status": mc.Status}
	}
	for _, n := range d.plugins {
		s := states[n]
		key.Plugins = append(key.Plugins, plugin{Name: n, Digest: s.digest})
	}
	h, err := hash.JSON(key)
	if err != nil {
		return "", fmt.Errorf("the render inputs of cluster %s: %w", cl.Cluster.Name, err)
	}
	return hash.Short(h), nil
}

// checkDeterminism fails every rendered cluster whose work carries the same render inputs and
// another hash: the same inputs rendered twice differently (a plugin reading a clock, a
// Flotilla change that forgot to bump renderEngineVersion). Rolling that out would flap.
func (d *desired) checkDeterminism(works map[string]*workWithAnnotations) []string {
	var failed []string
	for c, in := range d.inputs {
		w := works[c]
		if w == nil || w.inputs != in || w.hash == "" || w.hash == d.want[c] {
			continue
		}
		failed = append(failed, c)
	}
	sort.Strings(failed)
	for _, c := range failed {
		f := &override.RuleFailure{Cluster: c}
		var suspects []string
		for _, t := range d.traces[c] {
			if p := d.rulePlugins[t.Override+"/"+t.Rule]; p != "" {
				if f.Override == "" {
					f.Override, f.Rule = t.Override, t.Rule
				}
				if !slices.Contains(suspects, p) {
					suspects = append(suspects, p)
				}
			}
		}
		if f.Override == "" && len(d.traces[c]) > 0 {
			f.Override, f.Rule = d.traces[c][0].Override, d.traces[c][0].Rule
		}
		msg := fmt.Sprintf("render is not deterministic (inputs %s gave %s, now %s)", d.inputs[c], works[c].hash, d.want[c])
		if len(suspects) > 0 {
			msg += "; suspect WasmPlugin " + strings.Join(suspects, ", ")
		} else {
			msg += "; no WasmPlugin shaped it: suspect a Flotilla change to rendering"
		}
		f.Message = msg
		d.drop(c)
		d.fail(f)
		d.reasons[c] = failureNondeterministic
	}
	if len(failed) > 0 {
		d.tally()
	}
	return failed
}

// workWithAnnotations is what the determinism check reads of a work.
type workWithAnnotations struct{ inputs, hash string }

// byPlugin maps a ManifestTransformer WasmPlugin's change to the replica sets of the
// overrides naming it (through pluginIndex).
func (r *Reconciler) byPlugin(ctx context.Context, o client.Object) []reconcile.Request {
	list := &flotillav1alpha1.ManifestWorkReplicaSetOverrideList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{pluginIndex: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing the ManifestWorkReplicaSetOverrides of a WasmPlugin; its change reaches none of their replica sets", "plugin", o.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		out = append(out, overrideTargets(&list.Items[i])...)
	}
	return out
}

// pluginServingChanged: a transformer WasmPlugin's Ready condition or digest changed (what
// decides whether renders wait for it, and what they depend on).
func pluginServingChanged(e event.UpdateEvent) bool {
	old, cur := e.ObjectOld.(*flotillav1alpha1.WasmPlugin), e.ObjectNew.(*flotillav1alpha1.WasmPlugin)
	if old.Spec.Type != flotillav1alpha1.PluginTypeManifestTransformer && cur.Spec.Type != flotillav1alpha1.PluginTypeManifestTransformer {
		return false
	}
	if old.Status.Digest != cur.Status.Digest || old.Generation != cur.Generation {
		return true
	}
	a := meta.FindStatusCondition(old.Status.Conditions, flotillav1alpha1.ConditionReady)
	b := meta.FindStatusCondition(cur.Status.Conditions, flotillav1alpha1.ConditionReady)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.ObservedGeneration != b.ObservedGeneration || a.Reason != b.Reason
}

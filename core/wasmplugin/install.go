package wasmplugin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// InstalledByLabel marks the WasmPlugins and ConfigMaps a Flotilla component installed from
// the plugins built into it (its value names the component), so the component can remove
// what it no longer configures and tell its own plugins from an admin's.
const InstalledByLabel = "flotilla.dev/installed-by"

// Bundled is a plugin shipped inside a Flotilla binary (plugins/dist).
type Bundled struct {
	Name string
	Type abi.PluginType
	// SHA256 is the digest of the uncompressed module (spec.sha256).
	SHA256 string
	// Compressed is the zstd module, stored under the ConfigMap key plugin.wasm.zst.
	Compressed []byte
	// Config is spec.pluginConfig as JSON; empty for none.
	Config []byte
	// Source, when set, names the bundled module whose ConfigMap (ConfigMapName(Source))
	// holds this plugin's module, so several WasmPlugins — one module, different
	// pluginConfigs — share one ConfigMap; empty means Name.
	Source string
}

func (p Bundled) source() string {
	if p.Source != "" {
		return p.Source
	}
	return p.Name
}

// Installer installs bundled plugins the way an admin would: a ConfigMap holding the module
// and a cluster-scoped WasmPlugin referencing it, which the WasmPlugin controller then loads.
// Both are server-side applied, so drift is reverted at the next install. The hub
// (hub/plugininstall) and the klusterlet (on its managed cluster) use it.
type Installer struct {
	// Client reaches the cluster; its scheme knows core/v1 and flotilla.dev/v1alpha1.
	Client client.Client
	// Namespace holds the ConfigMaps; Apply creates it when missing.
	Namespace string
	// FieldManager owns the applied fields.
	FieldManager string
	// InstalledBy is the InstalledByLabel value of what this installer creates.
	InstalledBy string
}

// ConfigMapName is the ConfigMap holding plugin's module.
func ConfigMapName(plugin string) string { return "flotilla-plugin-" + plugin }

func (i Installer) labels() map[string]string {
	return map[string]string{InstalledByLabel: i.InstalledBy}
}

// Apply creates or updates p's ConfigMap and WasmPlugin (and the namespace).
func (i Installer) Apply(ctx context.Context, p Bundled) error {
	if err := i.ApplyModule(ctx, p); err != nil {
		return err
	}
	return i.ApplyPlugin(ctx, p)
}

// ApplyModule creates or updates the namespace and the ConfigMap holding p's module
// (ConfigMapName of p.Source, or of p.Name). With ApplyPlugin, it lets plugins sharing a
// module write the module once.
func (i Installer) ApplyModule(ctx context.Context, p Bundled) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(p.source()), Namespace: i.Namespace, Labels: i.labels()},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: p.Compressed},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: i.Namespace}}
	for _, o := range []client.Object{ns, cm} {
		if err := i.apply(ctx, o); err != nil {
			return fmt.Errorf("installing plugin %s: %w", p.Name, err)
		}
	}
	return nil
}

// ApplyPlugin creates or updates p's WasmPlugin alone, referencing the ConfigMap that
// ApplyModule writes for it.
func (i Installer) ApplyPlugin(ctx context.Context, p Bundled) error {
	wp := &flotillav1alpha1.WasmPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: i.labels()},
		Spec: flotillav1alpha1.WasmPluginSpec{
			Type: flotillav1alpha1.WasmPluginType(p.Type),
			Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{
				Namespace: i.Namespace, Name: ConfigMapName(p.source()), Key: flotillav1alpha1.SourceKeyWasmZstd}},
			SHA256: p.SHA256,
		},
	}
	if len(p.Config) > 0 {
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: p.Config}
	}
	if err := i.apply(ctx, wp); err != nil {
		return fmt.Errorf("installing plugin %s: %w", p.Name, err)
	}
	return nil
}

// Remove deletes the plugin called name and its ConfigMap if this installer (InstalledBy)
// installed it; a WasmPlugin of that name created by anyone else is left alone. A ConfigMap
// shared through Bundled.Source is named for the source, not name, and stays.
func (i Installer) Remove(ctx context.Context, name string) error {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := i.Client.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading WasmPlugin %s: %w", name, err)
	}
	if wp.Labels[InstalledByLabel] != i.InstalledBy {
		return nil
	}
	for _, o := range []client.Object{wp, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(name), Namespace: i.Namespace}}} {
		if err := i.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing plugin %s: deleting %T %s: %w", name, o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// apply server-side-applies obj, taking ownership of the fields it sets.
func (i Installer) apply(ctx context.Context, obj client.Object) error {
	gvk, err := i.Client.GroupVersionKindFor(obj)
	if err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if err := i.Client.Patch(ctx, obj, client.Apply, client.FieldOwner(i.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

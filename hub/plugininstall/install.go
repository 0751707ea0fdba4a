// Package plugininstall installs Flotilla's own Wasm plugins on the hub as ConfigMaps plus
// WasmPlugins, which the WasmPlugin controller then loads like any admin-supplied plugin: every
// Default plugin of plugins/dist (among them csr-renewal, the rule that approves renewals of
// accepted clusters) always, and csr-autoapprove only when auto-approval is configured.
package plugininstall

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/hub/registration/rbac"
	"github.com/flotilla-dev/flotilla/plugins/dist"
)

const (
	// Namespace holds the ConfigMaps with the modules.
	Namespace = "open-cluster-management-hub"
	// AutoApprovePlugin is the plugin installed when auto-approval is configured.
	AutoApprovePlugin = "csr-autoapprove"
	// InstalledByLabel marks what the hub installed, so it can remove what is no longer configured.
	InstalledByLabel = "flotilla.dev/installed-by"
	installedBy      = "flotilla-hub"
)

// AutoApprove configures csr-autoapprove: first-time CSRs of clusters whose name matches one
// of ClusterNamePatterns (path.Match globs), requested by one of Users, are approved.
type AutoApprove struct {
	Users               []string
	ClusterNamePatterns []string
}

// Enabled reports whether auto-approval was asked for.
func (a AutoApprove) Enabled() bool { return len(a.ClusterNamePatterns) > 0 }

// Install creates or updates the hub's plugins and removes csr-autoapprove if the hub had
// installed it and it is no longer configured.
func Install(ctx context.Context, c client.Client, auto AutoApprove) error {
	if err := rbac.Apply(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return fmt.Errorf("installing plugins: %w", err)
	}
	all, err := dist.Plugins()
	if err != nil {
		return fmt.Errorf("installing plugins: %w", err)
	}
	for _, p := range all {
		var config []byte
		switch {
		case p.Name == AutoApprovePlugin:
			if !auto.Enabled() {
				if err := remove(ctx, c, p.Name); err != nil {
					return err
				}
				continue
			}
			users := auto.Users
			if len(users) == 0 {
				users = []string{rbac.BootstrapUser()}
			}
			config, err = json.Marshal(map[string][]string{"clusterNamePatterns": auto.ClusterNamePatterns, "users": users})
			if err != nil {
				return fmt.Errorf("installing plugin %s: encoding pluginConfig: %w", p.Name, err)
			}
		case !p.Default:
			continue
		}
		if err := apply(ctx, c, p, config); err != nil {
			return err
		}
	}
	return nil
}

func configMapName(plugin string) string { return "flotilla-plugin-" + plugin }

func labels() map[string]string { return map[string]string{InstalledByLabel: installedBy} }

func apply(ctx context.Context, c client.Client, p dist.Plugin, config []byte) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: configMapName(p.Name), Namespace: Namespace, Labels: labels()},
		BinaryData: map[string][]byte{flotillav1alpha1.SourceKeyWasmZstd: p.Compressed},
	}
	wp := &flotillav1alpha1.WasmPlugin{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: labels()},
		Spec: flotillav1alpha1.WasmPluginSpec{
			Type: flotillav1alpha1.WasmPluginType(p.Type),
			Source: flotillav1alpha1.WasmPluginSource{ConfigMap: &flotillav1alpha1.ConfigMapSource{
				Namespace: Namespace, Name: cm.Name, Key: flotillav1alpha1.SourceKeyWasmZstd}},
			SHA256: p.SHA256,
		},
	}
	if len(config) > 0 {
		wp.Spec.PluginConfig = &apiextensionsv1.JSON{Raw: config}
	}
	for _, o := range []client.Object{cm, wp} {
		if err := rbac.Apply(ctx, c, o); err != nil {
			return fmt.Errorf("installing plugin %s: %w", p.Name, err)
		}
	}
	return nil
}

// remove deletes a plugin the hub installed earlier; one an admin created is left alone.
func remove(ctx context.Context, c client.Client, name string) error {
	wp := &flotillav1alpha1.WasmPlugin{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, wp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading WasmPlugin %s: %w", name, err)
	}
	if wp.Labels[InstalledByLabel] != installedBy {
		return nil
	}
	for _, o := range []client.Object{wp, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: configMapName(name), Namespace: Namespace}}} {
		if err := rbac.Delete(ctx, c, o); err != nil {
			return fmt.Errorf("removing plugin %s: %w", name, err)
		}
	}
	return nil
}

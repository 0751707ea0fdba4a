package plugininstall

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flotillav1alpha1 "github.com/flotilla-dev/flotilla/core/apis/flotilla/v1alpha1"
	"github.com/flotilla-dev/flotilla/core/wasmplugin"
	"github.com/flotilla-dev/flotilla/plugins/dist"
)

func TestBuiltinPrioritizerPlugin(t *testing.T) {
	for builtIn, want := range map[string]string{
		"Balance":                   "placement-balance",
		"Steady":                    "placement-steady",
		"ResourceAllocatableCPU":    "placement-resourceallocatablecpu",
		"ResourceAllocatableMemory": "placement-resourceallocatablememory",
	} {
		if got, ok := BuiltinPrioritizerPlugin(builtIn); !ok || got != want {
			t.Errorf("BuiltinPrioritizerPlugin(%q) = %q, %v; want %q", builtIn, got, ok, want)
		}
	}
	for _, other := range []string{"balance", "", "ResourceAllocatableGPU", "prioritizer-builtin"} {
		if got, ok := BuiltinPrioritizerPlugin(other); ok {
			t.Errorf("BuiltinPrioritizerPlugin(%q) = %q, true; want false", other, got)
		}
	}
	if got := BuiltinPrioritizers(); len(got) != 4 {
		t.Errorf("BuiltinPrioritizers() = %v", got)
	}
}

// TestInstallBuiltinPrioritizers records what Install applies: the BuiltIn prioritizers'
// module once, and one WasmPlugin per BuiltIn sharing it, each with its pluginConfig.
func TestInstallBuiltinPrioritizers(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := flotillav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var applied []client.Object
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, patch client.Patch, _ ...client.PatchOption) error {
			if patch != client.Apply {
				t.Errorf("%T %s: patch type %s, want server-side apply", obj, obj.GetName(), patch.Type())
			}
			applied = append(applied, obj.DeepCopyObject().(client.Object))
			return nil
		},
	}).Build()
	if err := Install(context.Background(), c, AutoApprove{}); err != nil {
		t.Fatal(err)
	}
	mod, err := dist.Get(BuiltinPrioritizersModule)
	if err != nil {
		t.Fatal(err)
	}
	source := wasmplugin.ConfigMapName(BuiltinPrioritizersModule)
	plugins := map[string]*flotillav1alpha1.WasmPlugin{}
	configMaps := map[string]int{}
	for _, o := range applied {
		switch o := o.(type) {
		case *flotillav1alpha1.WasmPlugin:
			if plugins[o.Name] != nil {
				t.Errorf("WasmPlugin %s applied twice", o.Name)
			}
			plugins[o.Name] = o
		case *corev1.ConfigMap:
			configMaps[o.Name]++
			if o.Name == source && len(o.BinaryData[flotillav1alpha1.SourceKeyWasmZstd]) != mod.ZstdBytes() {
				t.Errorf("ConfigMap %s holds %d bytes, want the %d of %s", o.Name, len(o.BinaryData[flotillav1alpha1.SourceKeyWasmZstd]), mod.ZstdBytes(), mod.Name)
			}
		}
	}
	if configMaps[source] != 1 {
		t.Errorf("ConfigMap %s applied %d times, want once", source, configMaps[source])
	}
	for name := range configMaps {
		if name != source && plugins[name[len("flotilla-plugin-"):]] == nil {
			t.Errorf("ConfigMap %s serves no WasmPlugin", name)
		}
	}
	if plugins[BuiltinPrioritizersModule] != nil {
		t.Errorf("the module itself was installed as a WasmPlugin without pluginConfig")
	}
	for _, builtIn := range BuiltinPrioritizers() {
		name, _ := BuiltinPrioritizerPlugin(builtIn)
		wp := plugins[name]
		if wp == nil {
			t.Errorf("no WasmPlugin %s for %s", name, builtIn)
			continue
		}
		if wp.Spec.Type != flotillav1alpha1.PluginTypePrioritizer || wp.Spec.SHA256 != mod.SHA256 ||
			wp.Spec.Source.ConfigMap == nil || wp.Spec.Source.ConfigMap.Name != source || wp.Spec.Source.ConfigMap.Namespace != Namespace ||
			wp.Spec.Source.ConfigMap.Key != flotillav1alpha1.SourceKeyWasmZstd || wp.Labels[InstalledByLabel] != installedBy {
			t.Errorf("WasmPlugin %s: %+v, labels %v", name, wp.Spec, wp.Labels)
		}
		if wp.Spec.PluginConfig == nil || string(wp.Spec.PluginConfig.Raw) != `{"prioritizer":"`+builtIn+`"}` {
			t.Errorf("WasmPlugin %s: pluginConfig %v", name, wp.Spec.PluginConfig)
		}
	}
	for _, name := range []string{"csr-renewal", "prioritizer-affinity"} {
		if plugins[name] == nil || configMaps[wasmplugin.ConfigMapName(name)] != 1 {
			t.Errorf("default plugin %s not installed as before", name)
		}
	}
	if plugins[AutoApprovePlugin] != nil {
		t.Errorf("%s installed although auto-approval is off", AutoApprovePlugin)
	}
}

// TestInstallAutoApproveConfig checks csr-autoapprove's pluginConfig: by default every
// bootstrap identity (both ServiceAccounts and the bootstrap-token group), else what was given.
func TestInstallAutoApproveConfig(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := flotillav1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		auto AutoApprove
		want string
	}{
		{AutoApprove{ClusterNamePatterns: []string{"dev-*"}},
			`{"clusterNamePatterns":["dev-*"],"groups":["system:bootstrappers:managedcluster"],` +
				`"users":["system:serviceaccount:open-cluster-management:agent-registration-bootstrap","system:serviceaccount:open-cluster-management:cluster-bootstrap"]}`},
		{AutoApprove{ClusterNamePatterns: []string{"*"}, Users: []string{"u"}}, `{"clusterNamePatterns":["*"],"users":["u"]}`},
		{AutoApprove{ClusterNamePatterns: []string{"*"}, Groups: []string{"g"}}, `{"clusterNamePatterns":["*"],"groups":["g"]}`},
	} {
		var got string
		c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
				if wp, ok := obj.(*flotillav1alpha1.WasmPlugin); ok && wp.Name == AutoApprovePlugin && wp.Spec.PluginConfig != nil {
					got = string(wp.Spec.PluginConfig.Raw)
				}
				return nil
			},
		}).Build()
		if err := Install(context.Background(), c, tc.auto); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%+v: pluginConfig %s, want %s", tc.auto, got, tc.want)
		}
	}
}

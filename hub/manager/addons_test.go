package manager

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

func TestValidateAddons(t *testing.T) {
	all := builtin.Names()
	for _, tc := range []struct {
		name    string
		addons  []string
		noHooks bool
		gateOff bool
		bind    string // ClusterProxyBindAddress
		// installAll is AddonsInstallAll.
		installAll bool
		want       string // "" = valid
	}{
		{name: "none", addons: nil},
		{name: "all", addons: all},
		{name: "msa alone", addons: []string{builtin.ManagedServiceAccount}},
		{name: "proxy alone", addons: []string{builtin.ClusterProxy}},
		{name: "unknown", addons: []string{"cluster-prox"}, want: `unknown add-on "cluster-prox"`},
		{name: "twice", addons: []string{builtin.ClusterProxy, builtin.ClusterProxy}, want: `"cluster-proxy" named twice`},
		{name: "gateway without proxy", addons: []string{builtin.ManagedServiceAccount, builtin.ClusterGateway}, want: "cluster-gateway needs cluster-proxy and managed-serviceaccount"},
		{name: "gateway without msa", addons: []string{builtin.ClusterProxy, builtin.ClusterGateway}, want: "cluster-gateway needs cluster-proxy and managed-serviceaccount"},
		{name: "webhooks off", addons: []string{builtin.ClusterProxy}, noHooks: true, want: "webhook server, which is disabled"},
		{name: "msa with webhooks off", addons: []string{builtin.ManagedServiceAccount}, noHooks: true},
		{name: "frontend with proxy", addons: []string{builtin.ClusterProxy}, bind: "127.0.0.1:0"},
		{name: "frontend without proxy", addons: []string{builtin.ManagedServiceAccount}, bind: ":8090", want: "needs add-on cluster-proxy"},
		{name: "frontend off", addons: nil, bind: "0"},
		{name: "add-on management off", addons: []string{builtin.ManagedServiceAccount}, gateOff: true, want: "feature gate AddonManagement"},
		{name: "install-all", addons: all, installAll: true},
		{name: "install-all without add-ons", installAll: true, want: "AddonsInstallAll needs add-ons"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate, err := NewFeatureGate()
			if err != nil {
				t.Fatal(err)
			}
			if tc.gateOff {
				if err := gate.Set("AddonManagement=false"); err != nil {
					t.Fatal(err)
				}
			}
			o := Options{Addons: tc.addons, FeatureGates: gate, Webhook: webhook.Options{Disabled: tc.noHooks}, ClusterProxyBindAddress: tc.bind, AddonsInstallAll: tc.installAll}
			err = o.validateAddons()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("validateAddons(%v): %v", tc.addons, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("validateAddons(%v) = %v, want an error containing %q", tc.addons, err, tc.want)
			}
		})
	}
}

// TestNewRefusesBadAddons: New checks the add-ons before building anything.
func TestNewRefusesBadAddons(t *testing.T) {
	_, err := New(Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Addons: []string{"nope"}, SkipWasmPluginController: true})
	if err == nil || !strings.Contains(err.Error(), `unknown add-on "nope"`) {
		t.Fatalf("New with add-on nope: %v, want the unknown add-on named", err)
	}
}

// readerFunc records what a credentialReader delegates.
type readerFunc struct {
	name string
	got  *[]string
}

func (r readerFunc) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	*r.got = append(*r.got, r.name+" get "+key.String())
	return nil
}

func (r readerFunc) List(_ context.Context, _ client.ObjectList, opts ...client.ListOption) error {
	*r.got = append(*r.got, r.name+" list "+(&client.ListOptions{}).ApplyOptions(opts).Namespace)
	return nil
}

func TestCredentialReader(t *testing.T) {
	var got []string
	r := credentialReader{Reader: readerFunc{"manager", &got}, secrets: readerFunc{"credentials", &got}, namespace: "creds"}
	ctx := t.Context()
	if err := r.Get(ctx, client.ObjectKey{Namespace: "creds", Name: "c1"}, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if err := r.List(ctx, &corev1.SecretList{}, client.InNamespace("creds")); err != nil {
		t.Fatal(err)
	}
	if err := r.Get(ctx, client.ObjectKey{Name: "c1"}, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	if err := r.List(ctx, &corev1.NamespaceList{}); err != nil {
		t.Fatal(err)
	}
	want := "credentials get creds/c1,credentials list creds,manager get /c1,manager list "
	if strings.Join(got, ",") != want {
		t.Fatalf("delegated %q, want %q", strings.Join(got, ","), want)
	}
	// Another namespace's Secret is refused, naming it, and never read.
	got = nil
	err := r.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "x"}, &corev1.Secret{})
	if err == nil || !strings.Contains(err.Error(), "kube-system/x") {
		t.Fatalf("Get of kube-system/x: %v, want a refusal naming it", err)
	}
	if err := r.List(ctx, &corev1.SecretList{}); err == nil || !strings.Contains(err.Error(), "only Secrets of creds") {
		t.Fatalf("List of every namespace's Secrets: %v, want a refusal", err)
	}
	if len(got) != 0 {
		t.Fatalf("refused reads were delegated: %v", got)
	}
}

package registration

import (
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestConfigManagementAndManaged(t *testing.T) {
	managed, management := &rest.Config{Host: "https://managed:6443"}, &rest.Config{Host: "https://management:6443"}
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"neither", Config{}, "ManagedConfig is required"},
		{"secret and config", Config{ManagedConfig: managed, ManagementConfig: management, ManagedKubeconfigSecret: "s"}, "mutually exclusive"},
		{"secret without management", Config{ManagedKubeconfigSecret: "s"}, "ManagedKubeconfigSecret needs ManagementConfig"},
		{"default mode", Config{ManagedConfig: managed}, ""},
		{"hosted with a file", Config{ManagedConfig: managed, ManagementConfig: management}, ""},
		{"hosted with a secret", Config{ManagementConfig: management, ManagedKubeconfigSecret: "s"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.withDefaults()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.cfg.ManagementConfig
			if want == nil {
				want = managed // Default mode: the agent's Secrets are on the managed cluster
			}
			if got.ManagementConfig != want {
				t.Errorf("ManagementConfig %v, want %v", got.ManagementConfig, want)
			}
			a, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if (a.management == a.managed) != (tc.cfg.ManagementConfig == nil) {
				t.Errorf("one clientset for both clusters: %v, want %v", a.management == a.managed, tc.cfg.ManagementConfig == nil)
			}
			if tc.cfg.ManagedConfig != nil && a.managedURL != managed.Host {
				t.Errorf("reported URL %q, want the managed cluster's %q", a.managedURL, managed.Host)
			}
		})
	}
}

func TestManagedKubeconfigRefusesPlugins(t *testing.T) {
	const exec = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://managed:6443"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	err := noPlugins([]byte(exec), "secret ns/s key kubeconfig")
	if err == nil || !strings.Contains(err.Error(), "secret ns/s key kubeconfig") || !strings.Contains(err.Error(), "credential plugin") {
		t.Fatalf("error %v, want one naming the secret and the credential plugin", err)
	}
	token := strings.Replace(exec, "{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}}", "{token: t}", 1)
	if err := noPlugins([]byte(token), "s"); err != nil {
		t.Fatalf("a token kubeconfig: %v", err)
	}
}

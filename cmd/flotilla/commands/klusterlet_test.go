package commands

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/klusterlet"
)

// --kubeconfig is the managed cluster unless a hosted flag names the managed cluster; then it
// is the management cluster.
func TestKlusterletHostedFlags(t *testing.T) {
	kubeconfig := &rest.Config{Host: "https://from-kubeconfig:6443"}
	managedFile := filepath.Join(t.TempDir(), "managed.kubeconfig")
	if err := environment.WriteKubeconfig(managedFile, "managed", &rest.Config{Host: "https://managed:6443"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		flags               hostedFlags
		managed, management string
		secret              string
	}{
		{"default", hostedFlags{}, kubeconfig.Host, "", ""},
		{"file", hostedFlags{managedKubeconfig: managedFile}, "https://managed:6443", kubeconfig.Host, ""},
		{"secret", hostedFlags{managedKubeconfigSecret: "external-managed-kubeconfig"}, "", kubeconfig.Host, "external-managed-kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts klusterlet.Options
			if err := tc.flags.apply(&opts, kubeconfig); err != nil {
				t.Fatal(err)
			}
			r := opts.Registration
			host := func(c *rest.Config) string {
				if c == nil {
					return ""
				}
				return c.Host
			}
			if host(r.ManagedConfig) != tc.managed || host(r.ManagementConfig) != tc.management || r.ManagedKubeconfigSecret != tc.secret {
				t.Errorf("managed %q, management %q, secret %q; want %q, %q, %q", host(r.ManagedConfig), host(r.ManagementConfig),
					r.ManagedKubeconfigSecret, tc.managed, tc.management, tc.secret)
			}
		})
	}
}

package webhook

import (
	"fmt"

	"github.com/spf13/pflag"
)

// FlagsHelp explains the webhook server in a command's --help; it ends with a sentence.
const FlagsHelp = `The hub serves admission webhooks (ManifestWork validation, the Rego policies) and
registers them in the Validating- and MutatingWebhookConfiguration flotilla-hub, trusting a CA
it creates and rotates itself (Secret open-cluster-management-hub/flotilla-hub-webhook-certs);
--webhook-configuration-name and --webhook-secret-name change the two names, so that
processes of different webhook components (--components) each write and prune only their
own configuration and certificates. By default it listens on a
free port of 127.0.0.1, which an API server on the same machine reaches. An API server
elsewhere needs --webhook-bind-address and --webhook-host (the name or IP it reaches the hub
at), or, for a hub running in that cluster, --webhook-service. The configuration stays when
the hub stops, as OCM's does: until the hub is back, creating a ManifestWork or changing its
spec fails (failure policy Fail), and so does a change of labels or annotations of what a
policy matches (a ManagedCluster's cluster-set label, for one), while finalizers, status and
deletes still work. The server also converts the add-on kinds between v1alpha1 (stored) and
v1beta1 for the API server; while the hub is down, only v1alpha1 can be read and written.`

// Flags are the webhook server's command-line flags.
type Flags struct {
	BindAddress string
	Hosts       []string
	Service     string
	// ConfigurationName and SecretName are Options.ConfigurationName and Options.SecretName.
	ConfigurationName, SecretName string
}

// AddFlags adds --webhook-bind-address, --webhook-host, --webhook-service,
// --webhook-configuration-name and --webhook-secret-name to fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.BindAddress, "webhook-bind-address", DefaultBindAddress,
		"host:port the admission webhook server listens on (port 0: a free port); 0 disables the server, leaving ManifestWorks unvalidated")
	fs.StringSliceVar(&f.Hosts, "webhook-host", nil,
		"host names or IPs the API server reaches the webhook server at: all go into its certificate, the first into the webhook URL (default: the host of --webhook-bind-address)")
	fs.StringVar(&f.Service, "webhook-service", "",
		"reach the webhook server through this Service, namespace/name:port, instead of a URL (a hub running in the cluster)")
	fs.StringVar(&f.ConfigurationName, "webhook-configuration-name", DefaultConfigurationName,
		"name of the Validating- and MutatingWebhookConfiguration the webhook server writes; each process of a split hub serving webhooks needs its own")
	fs.StringVar(&f.SecretName, "webhook-secret-name", DefaultSecretName,
		"name of the Secret (in "+DefaultNamespace+") holding the webhook server's CA and serving certificate; each process of a split hub serving webhooks needs its own")
}

// Options turns the flags into Options.
func (f *Flags) Options() (Options, error) {
	if f.BindAddress == "0" {
		return Options{Disabled: true}, nil
	}
	if f.ConfigurationName != "" {
		if err := checkConfigurationName(f.ConfigurationName); err != nil {
			return Options{}, fmt.Errorf("--webhook-configuration-name %w", err)
		}
	}
	if f.SecretName != "" {
		if err := checkSecretName(f.SecretName); err != nil {
			return Options{}, fmt.Errorf("--webhook-secret-name %w", err)
		}
	}
	o := Options{BindAddress: f.BindAddress, Hosts: f.Hosts, ConfigurationName: f.ConfigurationName, SecretName: f.SecretName}
	if f.Service != "" {
		svc, err := ParseServiceReference(f.Service)
		if err != nil {
			return o, err
		}
		o.Service = svc
	}
	_, err := o.withDefaults()
	return o, err
}

package commands

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// klusterletFieldFlags are the klusterlet flags that carry a Klusterlet's spec fields (OCM's
// agent flags of the same job), set by the klusterlet chart or operator.
type klusterletFieldFlags struct {
	externalServers []string
	hubHostAlias    string
	kubeAPIQPS      float32
	kubeAPIBurst    int
}

// Defaults of --kube-api-qps and --kube-api-burst: OCM's.
const (
	defaultKubeAPIQPS   = 50
	defaultKubeAPIBurst = 100
)

func (k *klusterletFieldFlags) add(f *pflag.FlagSet, opts *klusterlet.Options) {
	f.BoolVar(&opts.Work.Only, "work-only", false,
		"run the work agent alone, without registration (OCM's separate work agent of the Default and Hosted modes): it waits for --hub-kubeconfig-secret, which a klusterlet with --disable-work-agent writes, applies the cluster's ManifestWorks with its identity and starts again when its certificate changes; ready once it has read the secret; --leader-elect-name defaults to "+klusterlet.DefaultWorkLeaderElectionName)
	f.StringToStringVar(&opts.Registration.ClusterAnnotations, "cluster-annotations", nil,
		"annotations k=v,... set on the ManagedCluster when the agent creates it (Klusterlet registrationConfiguration.clusterAnnotations); as in OCM only keys with the prefix agent.open-cluster-management.io/ are set, others are dropped and logged")
	f.StringToStringVar(&opts.Registration.ClusterLabels, "cluster-labels", nil,
		"labels k=v,... set on the ManagedCluster when the agent creates it (Klusterlet registrationConfiguration.clusterLabels)")
	f.StringSliceVar(&k.externalServers, "external-server-urls", nil,
		"https URLs the hub reaches this cluster's API server at, URL or URL=CA-FILE (a PEM bundle; default the CA of --kubeconfig), comma-separated: the ManagedCluster's spec.managedClusterClientConfigs (Klusterlet externalServerURLs; default the server of --kubeconfig)")
	f.StringSliceVar(&opts.Registration.ReservedClusterClaimSuffixes, "reserved-cluster-claim-suffixes", nil,
		"ClusterClaims whose names end with one of these suffixes are reserved: reported regardless of --max-custom-cluster-claims (Klusterlet registrationConfiguration.clusterClaimConfiguration.reservedClusterClaimSuffixes)")
	f.StringVar(&opts.Registration.HostingClusterClaim, "hosting-cluster-claim", "",
		"report the reserved claim "+registration.HostingClusterClaimName+" with this value, the cluster the agent runs on (Klusterlet deployOption.reportHostingCluster in Hosted mode)")
	f.StringVar(&k.hubHostAlias, "hub-host-alias", "",
		"HOST=IP: connect to the hub's host name HOST at IP, TLS still verifying HOST, as a hosts-file entry would (Klusterlet hubApiServerHostAlias); add-on agents' Pods need their own entry")
	f.Float32Var(&k.kubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS,
		"requests a second the registration and add-on agents make to the managed cluster's API server (Klusterlet registrationConfiguration.kubeAPIQPS)")
	f.IntVar(&k.kubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst,
		"burst of the registration and add-on agents' requests to the managed cluster above --kube-api-qps (Klusterlet registrationConfiguration.kubeAPIBurst)")
	f.Float32Var(&opts.Work.KubeAPIQPS, "work-kube-api-qps", 0,
		"requests a second the work agent makes to the managed cluster's API server (Klusterlet workConfiguration.kubeAPIQPS); 0: 400")
	f.IntVar(&opts.Work.KubeAPIBurst, "work-kube-api-burst", 0,
		"burst of the work agent's requests to the managed cluster (Klusterlet workConfiguration.kubeAPIBurst); 0: 800")
	f.Float32Var(&opts.Work.HubKubeAPIQPS, "hub-kube-api-qps", 0,
		"requests a second the work agent makes to the hub's API server (Klusterlet workConfiguration.hubKubeAPIQPS); 0: 200")
	f.IntVar(&opts.Work.HubKubeAPIBurst, "hub-kube-api-burst", 0,
		"burst of the work agent's requests to the hub (Klusterlet workConfiguration.hubKubeAPIBurst); 0: 400")
}

// apply sets what the flags need beyond plain options: the external servers with their CA
// files, the host alias's dialer, and the rates of managed, the managed cluster's config.
func (k *klusterletFieldFlags) apply(opts *klusterlet.Options) error {
	for _, s := range k.externalServers {
		u, caFile, _ := strings.Cut(s, "=")
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "https" || p.Host == "" {
			return fmt.Errorf("--external-server-urls: %q is not an https URL", u)
		}
		server := registration.ExternalServer{URL: u}
		if caFile != "" {
			if server.CABundle, err = os.ReadFile(caFile); err != nil {
				return fmt.Errorf("--external-server-urls: CA file of %s: %w", u, err)
			}
		}
		opts.Registration.ExternalServers = append(opts.Registration.ExternalServers, server)
	}
	if k.hubHostAlias != "" {
		alias, err := registration.ParseHostAlias(k.hubHostAlias)
		if err != nil {
			return fmt.Errorf("--hub-host-alias: %w", err)
		}
		opts.Registration.HubDial = alias.Dial(opts.Registration.HubDial)
	}
	if k.kubeAPIQPS <= 0 || k.kubeAPIBurst <= 0 {
		return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d must be positive", k.kubeAPIQPS, k.kubeAPIBurst)
	}
	opts.Registration.ManagedQPS, opts.Registration.ManagedBurst = k.kubeAPIQPS, k.kubeAPIBurst
	return nil
}

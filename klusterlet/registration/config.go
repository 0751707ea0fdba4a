package registration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
)

// Defaults of Config.
const (
	DefaultAgentNamespace            = "open-cluster-management-agent"
	DefaultHubKubeconfigSecret       = "hub-kubeconfig-secret"
	DefaultBootstrapKubeconfigSecret = "bootstrap-hub-kubeconfig"
	DefaultLeaseDurationSeconds      = 60
	DefaultStatusSyncPeriod          = time.Minute
	DefaultRetryInitial              = time.Second
	DefaultRetryMax                  = 10 * time.Second
	// LeaseName is the heartbeat Lease in the cluster namespace on the hub.
	LeaseName = "managed-cluster-lease"
)

// Config configures one registration agent.
type Config struct {
	// ClusterName registers the cluster under this name. Empty: the name stored
	// in the hub kubeconfig secret, else a generated one (then stored there).
	ClusterName string
	// AgentName is the agent part of the certificate common name. Empty: the
	// name stored in the hub kubeconfig secret, else a generated one.
	AgentName string

	// ManagedConfig reaches the managed cluster's API server: Nodes, version, ClusterClaims,
	// kube-system's UID. Required unless ManagedKubeconfigSecret is set.
	ManagedConfig *rest.Config
	// ManagementConfig reaches the cluster the agent runs on (OCM's management cluster, the
	// hosting cluster in Hosted mode): the agent namespace, the bootstrap and hub kubeconfig
	// Secrets. Default ManagedConfig (Default mode: one cluster).
	ManagementConfig *rest.Config
	// ManagedKubeconfigSecret, when set, names a Secret in AgentNamespace on the management
	// cluster whose key "kubeconfig" reaches the managed cluster, instead of ManagedConfig
	// (which must then be nil; ManagementConfig is required). The agent watches it: a changed
	// kubeconfig restarts the agent's sessions with it; a missing or unusable one is recorded
	// (State.ManagedKubeconfigError) and read again with backoff.
	ManagedKubeconfigSecret string
	// ManagedQPS and ManagedBurst rate-limit the agent's requests to the managed cluster
	// (Klusterlet registrationConfiguration.kubeAPIQPS/kubeAPIBurst), on ManagedConfig or the
	// config read from ManagedKubeconfigSecret; 0 leaves that config's own.
	ManagedQPS   float32
	ManagedBurst int
	// ManagedClusterURL is reported to the hub in
	// spec.managedClusterClientConfigs. Default the managed cluster's kubeconfig server.
	ManagedClusterURL string
	// ManagedClusterCABundle is reported along with the URL. Default the CA of
	// the managed cluster's kubeconfig.
	ManagedClusterCABundle []byte

	// BootstrapKubeconfig is a kubeconfig for the hub with the bootstrap
	// identity. Empty: read key "kubeconfig" of secret BootstrapKubeconfigSecret
	// in AgentNamespace each time the agent needs to bootstrap.
	BootstrapKubeconfig []byte
	// BootstrapKubeconfigSecret default DefaultBootstrapKubeconfigSecret.
	BootstrapKubeconfigSecret string
	// AgentNamespace holds the agent's secrets on the management cluster. Default
	// DefaultAgentNamespace. Several agents may share one API server when each has its
	// own namespace.
	AgentNamespace string
	// HubKubeconfigSecret is where the signed credentials are stored. Default
	// DefaultHubKubeconfigSecret.
	HubKubeconfigSecret string
	// HubDial, when set, opens every connection to the hub (bootstrap and signed identity,
	// so also the work and add-on agents' hub clients, which share the latter's transport);
	// the TLS server name stays the kubeconfig's. OCM's Klusterlet hubApiServerHostAlias
	// (klusterlet/operator) uses it to send a host name DNS does not know to an IP address.
	// Default: a plain net.Dialer.
	HubDial DialFunc

	// ClusterAnnotations are set on the ManagedCluster when the agent creates it (OCM's
	// --cluster-annotations, Klusterlet registrationConfiguration.clusterAnnotations): only
	// keys with the prefix agent.open-cluster-management.io; others are dropped and logged, as
	// OCM does. Others may change them later.
	ClusterAnnotations map[string]string
	// ClusterLabels are set on the ManagedCluster when the agent creates it (Klusterlet
	// registrationConfiguration.clusterLabels); others may change them later.
	ClusterLabels map[string]string
	// ExternalServers, when set, are reported in spec.managedClusterClientConfigs instead of
	// ManagedClusterURL (OCM's --spoke-external-server-urls, Klusterlet externalServerURLs);
	// an entry without a CABundle takes ManagedClusterCABundle. Each URL must be https.
	ExternalServers []ExternalServer
	// ReservedClusterClaimSuffixes makes ClusterClaims whose names end with one of them
	// reserved: reported regardless of MaxCustomClusterClaims (OCM's
	// --reserved-cluster-claim-suffixes).
	ReservedClusterClaimSuffixes []string
	// HostingClusterClaim, when set, is reported as the reserved claim
	// hosting-cluster.open-cluster-management.io (Klusterlet deployOption.reportHostingCluster):
	// the cluster the agent runs on in Hosted mode.
	HostingClusterClaim string

	// MaxCustomClusterClaims limits the custom (non-reserved) claims reported.
	// 0 means clusterv1alpha1.DefaultMaxCustomClusterClaims; negative means none.
	MaxCustomClusterClaims int
	// LeaseDurationSeconds is written into a ManagedCluster the agent creates.
	// The agent renews its lease at the value the ManagedCluster carries.
	// Default DefaultLeaseDurationSeconds.
	LeaseDurationSeconds int32
	// StatusSyncPeriod bounds how stale the status gets when no watch event
	// arrives. Default DefaultStatusSyncPeriod.
	StatusSyncPeriod time.Duration
	// RotationThreshold is the least remaining fraction of the certificate lifetime at
	// which it is renewed; each certificate is renewed at a point chosen at random, once,
	// between this and RotationJitter (a quarter) more. Default DefaultRotationThreshold
	// (0.2, so 20% to 25% of the lifetime remaining, as OCM's agent does).
	RotationThreshold float64
	// RotationRand returns a number in [0,1) that places a certificate's renewal in that
	// window; it is called once per certificate. Default math/rand/v2's Float64.
	RotationRand func() float64
	// CSRExpirationSeconds asks the signer for this certificate lifetime; 0
	// leaves it to the signer (Kubernetes requires at least 600).
	CSRExpirationSeconds int32
	// RetryInitial and RetryMax bound the backoff between failed attempts.
	RetryInitial, RetryMax time.Duration

	// Scheme, when set, is the scheme of the agent's clients, shared with other agents in the
	// process (it must hold NewScheme's types; clients only read it). Nil: NewScheme().
	Scheme *runtime.Scheme
	// ManagedMapper, when set, maps kinds to resources on the managed cluster for the agent's
	// clients, shared with other agents of the cluster. Nil: the agent builds its own.
	ManagedMapper meta.RESTMapper
	// HubMapper, when set, maps kinds to resources on the hub for every hub client of the
	// agent (bootstrap and sessions) and, through Session.HubMapper, of the agents beside it.
	// Nil: one per hub session, built from the session's own identity. A shared one (a fleet
	// simulator's, one per process) saves each cluster its own copy of the hub's discovery.
	HubMapper meta.RESTMapper

	// Logger receives the agent's logs. Default: discarded.
	Logger logr.Logger
	// Clock drives timers; default the real clock.
	Clock clock.Clock
	// OnAccepted, when set, runs once per hub session as soon as the hub has accepted the
	// cluster, with a context that ends with the session (a new identity starts a new one).
	// The klusterlet runs its work agent in it. An error is logged and the call retried.
	OnAccepted func(ctx context.Context, s Session) error
}

// withDefaults validates c and fills in defaults.
// ManagedRate returns cfg with ManagedQPS and ManagedBurst, a copy when they are set.
func (c Config) ManagedRate(cfg *rest.Config) *rest.Config {
	if c.ManagedQPS <= 0 && c.ManagedBurst <= 0 {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	if c.ManagedQPS > 0 {
		cfg.QPS = c.ManagedQPS
	}
	if c.ManagedBurst > 0 {
		cfg.Burst = c.ManagedBurst
	}
	return cfg
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.ManagedKubeconfigSecret != "" && c.ManagedConfig != nil:
		return c, errors.New("registration agent: ManagedConfig and ManagedKubeconfigSecret are mutually exclusive")
	case c.ManagedKubeconfigSecret != "" && c.ManagementConfig == nil:
		return c, errors.New("registration agent: ManagedKubeconfigSecret needs ManagementConfig, the cluster the Secret is on")
	case c.ManagedKubeconfigSecret == "" && c.ManagedConfig == nil:
		return c, errors.New("registration agent: ManagedConfig is required")
	}
	if c.ManagedConfig != nil {
		c.ManagedConfig = c.ManagedRate(c.ManagedConfig)
	}
	if c.ManagementConfig == nil {
		c.ManagementConfig = c.ManagedConfig
	}
	if err := c.klusterletFieldDefaults(); err != nil {
		return c, err
	}
	if c.AgentNamespace == "" {
		c.AgentNamespace = DefaultAgentNamespace
	}
	if c.HubKubeconfigSecret == "" {
		c.HubKubeconfigSecret = DefaultHubKubeconfigSecret
	}
	if c.BootstrapKubeconfigSecret == "" {
		c.BootstrapKubeconfigSecret = DefaultBootstrapKubeconfigSecret
	}
	if c.MaxCustomClusterClaims == 0 {
		c.MaxCustomClusterClaims = clusterv1alpha1.DefaultMaxCustomClusterClaims
	}
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.LeaseDurationSeconds < 0 {
		return c, fmt.Errorf("registration agent: LeaseDurationSeconds %d must be positive", c.LeaseDurationSeconds)
	}
	if c.StatusSyncPeriod <= 0 {
		c.StatusSyncPeriod = DefaultStatusSyncPeriod
	}
	if c.RotationThreshold == 0 {
		c.RotationThreshold = DefaultRotationThreshold
	}
	if c.RotationThreshold < 0 || c.RotationThreshold >= 1 {
		return c, fmt.Errorf("registration agent: RotationThreshold %v must be in (0,1)", c.RotationThreshold)
	}
	if c.CSRExpirationSeconds != 0 && c.CSRExpirationSeconds < 600 {
		return c, fmt.Errorf("registration agent: CSRExpirationSeconds %d is below the Kubernetes minimum of 600", c.CSRExpirationSeconds)
	}
	if c.RetryInitial <= 0 {
		c.RetryInitial = DefaultRetryInitial
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.ClusterName != "" {
		if err := (Identity{ClusterName: c.ClusterName, AgentName: "x"}).Validate(); err != nil {
			return c, fmt.Errorf("registration agent: ClusterName: %w", err)
		}
	}
	if c.AgentName != "" {
		if err := (Identity{ClusterName: "x", AgentName: c.AgentName}).Validate(); err != nil {
			return c, fmt.Errorf("registration agent: AgentName: %w", err)
		}
	}
	return c, nil
}

// managedClientConfig is what the agent reports in spec.managedClusterClientConfigs for a
// managed cluster reached with managed: ManagedClusterURL and ManagedClusterCABundle, else
// managed's server and CA.
func (c Config) managedClientConfig(managed *rest.Config) (url string, ca []byte, err error) {
	url, ca = c.ManagedClusterURL, c.ManagedClusterCABundle
	if url == "" {
		url = managed.Host
	}
	if len(ca) == 0 {
		ca = managed.CAData
	}
	if len(ca) == 0 && managed.CAFile != "" {
		if ca, err = os.ReadFile(managed.CAFile); err != nil {
			return "", nil, fmt.Errorf("CA file of the managed cluster's kubeconfig: %w", err)
		}
	}
	return url, ca, nil
}

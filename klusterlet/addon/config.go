// Package addon is the klusterlet's side of add-on agents, as OCM's registration agent does
// it (ocm pkg/registration/spoke/addon): for each ManagedClusterAddOn in the cluster's
// namespace on the hub it
//
//   - obtains the client certificates of the add-on's registrations (status.registrations):
//     a CSR on the hub, filed with the cluster agent's identity, for the registration's signer
//     and subject; the signed certificate goes into a Secret in the add-on's install namespace
//     on the managed cluster (on the management cluster for a hosted add-on, see Hosted),
//     "<addon>-hub-kubeconfig" for kubernetes.io/kube-apiserver-client (with a kubeconfig for
//     the hub) and "<addon>-<signer, / as ->-client-cert" for other
//     signers, renewed when 20% to 25% of its lifetime is left, and deleted when the
//     registration or the ManagedClusterAddOn goes; the Secrets are labelled with the add-on
//     and the klusterlet (SecretAddOnLabel, SecretKlusterletLabel), so that those of an
//     add-on removed while the klusterlet was down are deleted when it starts, and flotilla
//     unjoin removes them all;
//   - reports the add-on's health from its Lease: unless status.healthCheck.mode is
//     Customized, the Lease named after the add-on in its install namespace on the managed
//     cluster (management cluster when hosted) decides the Available condition (OCM's
//     reasons and its grace of five lease durations).
//
// The install namespace is status.namespace, else spec.installNamespace, else
// open-cluster-management-agent-addon. The agent does not create it: the add-on's manifests
// do, and the Secret is written once it exists. The exception are built-in add-ons
// (Config.Builtins, builtin.go), whose agents run inside the klusterlet: it creates their
// namespace, runs each agent with its own hub identity and renews its Lease while it is
// healthy.
package addon

import (
	"errors"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// Defaults of Config.
const (
	// DefaultInstallNamespace is where add-on agents run when their ManagedClusterAddOn says
	// nothing else.
	DefaultInstallNamespace = "open-cluster-management-agent-addon"
	// DefaultLeaseDurationSeconds is the add-on lease duration OCM assumes; an add-on whose
	// Lease was not renewed for LeaseGraceTimes of it is unavailable.
	DefaultLeaseDurationSeconds = 60
	// LeaseGraceTimes is OCM's grace: five lease durations.
	LeaseGraceTimes = 5
	// DefaultLeaseResync is how often health is looked at again without any Lease event (a
	// missing Lease, a Lease on the hub, a missed event).
	DefaultLeaseResync = 5 * time.Minute
)

// FieldManager writes the add-on status fields this agent owns (the Available condition of
// Lease health).
const FieldManager = "flotilla-addon-agent"

// Config configures the add-on side of one klusterlet, for one accepted hub session.
type Config struct {
	ClusterName string
	// AgentNamespace is the klusterlet's agent namespace, which labels the Secrets it writes
	// (SecretKlusterletLabel). Default registration.DefaultAgentNamespace.
	AgentNamespace string
	// AgentName is the registration agent's name: the agent part of an add-on's default
	// common name when its registration names no user.
	AgentName string
	// HubConfig reaches the hub with the cluster agent's identity (it follows certificate
	// rotation: registration.Session.HubConfig).
	HubConfig *rest.Config
	// HubEndpoint is carried into the add-ons' hub kubeconfigs (server, CA bundle, proxy).
	HubEndpoint registration.HubEndpoint
	// ManagedConfig reaches the managed cluster, where the Secrets and Leases of add-ons
	// running there are, and the built-in add-ons act.
	ManagedConfig *rest.Config
	// ManagementConfig reaches the cluster the klusterlet runs on (OCM's management cluster),
	// where the Secrets and Leases of hosted add-ons are: those whose ManagedClusterAddOn
	// carries the annotation addon.open-cluster-management.io/hosting-cluster-name (OCM's
	// isAddonRunningOutsideManagedCluster). Default ManagedConfig.
	ManagementConfig *rest.Config

	// CSRExpirationSeconds asks the signer for this certificate lifetime; 0 leaves it to the
	// signer.
	CSRExpirationSeconds int32
	// RotationThreshold as in registration.Config. Default registration.DefaultRotationThreshold.
	RotationThreshold float64
	// LeaseDurationSeconds is the add-on lease duration assumed; default
	// DefaultLeaseDurationSeconds.
	LeaseDurationSeconds int32
	// LeaseResync: default DefaultLeaseResync.
	LeaseResync time.Duration
	// RetryInitial and RetryMax bound the backoff between failed attempts.
	RetryInitial, RetryMax time.Duration

	// Scheme, when set, is the scheme of the agent's hub client and cache, shared with other
	// agents (it must hold NewScheme's types; they only read it); HubMapper their hub mapper
	// (registration.Session's). Nil: the agent builds its own.
	Scheme    *runtime.Scheme
	HubMapper meta.RESTMapper
	// HubKube, when set, is the hub clientset to use (registration.Session's, which has
	// HubConfig's identity and user agent). Nil: one built from HubConfig.
	HubKube kubernetes.Interface

	// Builtins are the add-on agents built into the klusterlet, by add-on name: each runs
	// while its ManagedClusterAddOn is labelled BuiltinLabel and is no template add-on
	// (builtin.go). The caller supplies them, so that this package imports none.
	Builtins map[string]BuiltinAgent

	Logger logr.Logger
	Clock  clock.Clock
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.ClusterName == "":
		return c, errors.New("add-on agent: ClusterName is required")
	case c.AgentName == "":
		return c, errors.New("add-on agent: AgentName is required")
	case c.HubConfig == nil:
		return c, errors.New("add-on agent: HubConfig is required")
	case c.ManagedConfig == nil:
		return c, errors.New("add-on agent: ManagedConfig is required")
	}
	if c.ManagementConfig == nil {
		c.ManagementConfig = c.ManagedConfig
	}
	if c.AgentNamespace == "" {
		c.AgentNamespace = registration.DefaultAgentNamespace
	}
	if c.HubEndpoint.Server == "" {
		c.HubEndpoint.Server = c.HubConfig.Host
	}
	if c.RotationThreshold == 0 {
		c.RotationThreshold = registration.DefaultRotationThreshold
	}
	if c.LeaseDurationSeconds <= 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.LeaseResync <= 0 {
		c.LeaseResync = DefaultLeaseResync
	}
	if c.RetryInitial <= 0 {
		c.RetryInitial = registration.DefaultRetryInitial
	}
	if c.RetryMax <= 0 {
		c.RetryMax = registration.DefaultRetryMax
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}

func (c Config) backoff() *backoff.Backoff {
	return backoff.New(c.RetryInitial, c.RetryMax)
}

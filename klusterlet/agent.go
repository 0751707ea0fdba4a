// Package klusterlet is the agent that runs on each managed cluster. Today it
// runs the registration agent (klusterlet/registration); later agents (work,
// add-ons) share its Options and lifetime.
package klusterlet

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// Options configures a klusterlet. Only ManagedConfig is required; see
// registration.Config for the meaning of each field and its default.
type Options struct {
	// ClusterName: empty means the name stored in the hub kubeconfig secret, or
	// a generated one.
	ClusterName string
	// AgentName: empty means the name stored in the hub kubeconfig secret, or a
	// generated one (persisted as agent-name).
	AgentName string

	// ManagedConfig reaches the managed cluster's API server.
	ManagedConfig *rest.Config
	// ManagedClusterURL and ManagedClusterCABundle are reported to the hub;
	// default the host and CA of ManagedConfig.
	ManagedClusterURL      string
	ManagedClusterCABundle []byte

	// BootstrapKubeconfig (bytes) or BootstrapKubeconfigFile (path) hold the
	// bootstrap kubeconfig; when both are empty it is read from the secret
	// bootstrap-hub-kubeconfig in AgentNamespace.
	BootstrapKubeconfig     []byte
	BootstrapKubeconfigFile string

	// AgentNamespace (default open-cluster-management-agent) holds the secrets.
	AgentNamespace string
	// HubKubeconfigSecret (default hub-kubeconfig-secret) stores the hub
	// kubeconfig, tls.crt, tls.key, cluster-name and agent-name.
	HubKubeconfigSecret string

	// MaxCustomClusterClaims: 0 means 20; negative means none.
	MaxCustomClusterClaims int
	// LeaseDurationSeconds for a ManagedCluster the agent creates (default 60).
	LeaseDurationSeconds int32
	// StatusSyncPeriod is the periodic status resync (default 1m); changes are
	// also pushed as soon as watches see them.
	StatusSyncPeriod time.Duration
	// RotationThreshold: renew when this fraction of the lifetime remains (0.2).
	RotationThreshold float64
	// CSRExpirationSeconds requests a certificate lifetime (0: signer default).
	CSRExpirationSeconds int32
	// RetryInitial and RetryMax bound the retry backoff (1s and 10s).
	RetryInitial, RetryMax time.Duration

	Logger logr.Logger
	Clock  clock.Clock
}

// Agent is a configured klusterlet.
type Agent struct {
	Registration *registration.Agent
}

// New validates opts and builds the agent without contacting any server.
func New(opts Options) (*Agent, error) {
	bootstrap := opts.BootstrapKubeconfig
	if len(bootstrap) == 0 && opts.BootstrapKubeconfigFile != "" {
		data, err := os.ReadFile(opts.BootstrapKubeconfigFile)
		if err != nil {
			return nil, fmt.Errorf("klusterlet: reading bootstrap kubeconfig file: %w", err)
		}
		bootstrap = data
	}
	reg, err := registration.New(registration.Config{
		ClusterName:            opts.ClusterName,
		AgentName:              opts.AgentName,
		ManagedConfig:          opts.ManagedConfig,
		ManagedClusterURL:      opts.ManagedClusterURL,
		ManagedClusterCABundle: opts.ManagedClusterCABundle,
		BootstrapKubeconfig:    bootstrap,
		AgentNamespace:         opts.AgentNamespace,
		HubKubeconfigSecret:    opts.HubKubeconfigSecret,
		MaxCustomClusterClaims: opts.MaxCustomClusterClaims,
		LeaseDurationSeconds:   opts.LeaseDurationSeconds,
		StatusSyncPeriod:       opts.StatusSyncPeriod,
		RotationThreshold:      opts.RotationThreshold,
		CSRExpirationSeconds:   opts.CSRExpirationSeconds,
		RetryInitial:           opts.RetryInitial,
		RetryMax:               opts.RetryMax,
		Logger:                 opts.Logger,
		Clock:                  opts.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("klusterlet: %w", err)
	}
	return &Agent{Registration: reg}, nil
}

// Run runs the agent until ctx ends; it returns nil then.
func (a *Agent) Run(ctx context.Context) error { return a.Registration.Run(ctx) }

// Run builds an agent from opts and runs it until ctx ends. Only invalid
// options make it return an error; an unreachable or refusing hub does not.
func Run(ctx context.Context, opts Options) error {
	a, err := New(opts)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

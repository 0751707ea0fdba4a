package addon

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// BuiltinAgent is an add-on agent that runs inside the klusterlet (cluster-proxy,
// managed-serviceaccount, cluster-gateway) instead of as a Deployment on the cluster. Run
// returns when ctx ends (the add-on was disabled, became a template add-on, or the
// klusterlet stops).
type BuiltinAgent interface {
	Run(ctx context.Context, env BuiltinEnv) error
}

// BuiltinEnv is what a built-in agent gets from the klusterlet.
type BuiltinEnv struct {
	// ClusterName is the managed cluster's name on the hub; InstallNamespace is the
	// add-on's namespace on the managed cluster (created before Run).
	ClusterName, InstallNamespace string
	// HubConfig is the add-on's own hub identity (from <addon>-hub-kubeconfig); nil for
	// add-ons that register none (cluster-gateway).
	HubConfig *rest.Config
	// HubEndpoint is how the klusterlet reaches and trusts the hub (server, CA, proxy-url).
	HubEndpoint registration.HubEndpoint
	// ManagedConfig reaches the managed cluster's API server.
	ManagedConfig *rest.Config
	// Healthy reports the agent's health; the add-on's Lease is renewed only while true.
	Healthy func(bool)
	Logger  logr.Logger
}

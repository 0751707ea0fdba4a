// Package klusterlet is the agent that runs on each managed cluster. Today it
// runs the registration agent (klusterlet/registration); later agents (work,
// add-ons) share its Options and lifetime.
package klusterlet

import (
	"context"
	"fmt"
	"os"

	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// Options configures a klusterlet: one section per agent it runs. Today that is the
// registration agent; the work and add-on agents join here as they arrive.
type Options struct {
	// Registration configures the registration agent; registration.Config documents each
	// field and its default. Only Registration.ManagedConfig is required.
	Registration registration.Config
	// BootstrapKubeconfigFile is read into Registration.BootstrapKubeconfig when that is
	// empty; with both empty the agent reads the secret bootstrap-hub-kubeconfig.
	BootstrapKubeconfigFile string
}

// Agent is a configured klusterlet.
type Agent struct {
	Registration *registration.Agent
}

// New validates opts and builds the agent without contacting any server.
func New(opts Options) (*Agent, error) {
	cfg := opts.Registration
	if len(cfg.BootstrapKubeconfig) == 0 && opts.BootstrapKubeconfigFile != "" {
		data, err := os.ReadFile(opts.BootstrapKubeconfigFile)
		if err != nil {
			return nil, fmt.Errorf("klusterlet: reading bootstrap kubeconfig file %s: %w", opts.BootstrapKubeconfigFile, err)
		}
		cfg.BootstrapKubeconfig = data
	}
	reg, err := registration.New(cfg)
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

package klusterlet

import (
	"cmp"

	"github.com/flotilla-dev/flotilla/klusterlet/plugins"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// PluginOptions configures the Wasm plugin loader the klusterlet runs on the cluster it runs
// on (the managed cluster, or the management cluster in hosted mode) for the work agent (klusterlet/plugins): the WasmPlugin CRD, the klusterlet's own
// FeedbackExtractors, and the WasmPlugin controller loading FeedbackExtractor plugins. It runs
// only with the work agent, from the start (it needs no hub).
type PluginOptions struct {
	// Disabled runs no loader: WellKnownStatus feedback rules then report that no plugins
	// are loaded.
	Disabled bool
	// CacheDir keeps compiled plugins on disk across restarts.
	CacheDir string
	// SkipInstall does not install the klusterlet's own FeedbackExtractors (feedback-wellknown).
	SkipInstall bool
}

// pluginConfig is the loader configuration of opts, nil when no loader runs.
func pluginConfig(opts Options) *plugins.Config {
	if opts.Work.Disabled || opts.Plugins.Disabled {
		return nil
	}
	ns := opts.Registration.AgentNamespace
	if ns == "" {
		ns = registration.DefaultAgentNamespace
	}
	return &plugins.Config{
		// The WasmPlugins are the agent's configuration, in its namespace: on the cluster the
		// agent runs on (the managed one in Default mode).
		ManagedConfig: cmp.Or(opts.Registration.ManagementConfig, opts.Registration.ManagedConfig),
		Namespace:     ns,
		CacheDir:      opts.Plugins.CacheDir,
		SkipInstall:   opts.Plugins.SkipInstall,
		Logger:        opts.Registration.Logger,
	}
}

// startPlugins starts (or joins, when another klusterlet of this process serves the same
// managed cluster) the plugin loader and returns its release.
func (a *Agent) startPlugins() (release func(), err error) {
	if a.plugins == nil {
		return func() {}, nil
	}
	l, release, err := plugins.Start(*a.plugins)
	if err != nil {
		return nil, err
	}
	a.loader.Store(l)
	return release, nil
}

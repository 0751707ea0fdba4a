package operator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/hub/manager"
	"github.com/flotilla-dev/flotilla/hub/plugininstall"
)

// settings is what the hub takes from a ClusterManager.
type settings struct {
	// generation is the ClusterManager's metadata.generation; 0 without one.
	generation int64
	// gates are the featureGates entries, per section.
	gates operatorrun.FeatureGates
	// autoApproveUsers are registrationConfiguration.autoApproveUsers and the csr
	// registration driver's autoApprovedIdentities; nil leaves the flags' users.
	autoApproveUsers []string
}

// running is the configuration a hub runs with; a change restarts the hub.
type running struct {
	// gates holds every gate the hub knows, enabled or not.
	gates       map[string]bool
	autoApprove plugininstall.AutoApprove
}

func (r running) equal(o running) bool {
	return maps.Equal(r.gates, o.gates) &&
		slices.Equal(r.autoApprove.Users, o.autoApprove.Users) &&
		slices.Equal(r.autoApprove.Groups, o.autoApprove.Groups) &&
		slices.Equal(r.autoApprove.ClusterNamePatterns, o.autoApprove.ClusterNamePatterns)
}

// diff describes what changed from r to o, for the log.
func (r running) diff(o running) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(o.gates)) {
		if r.gates[name] != o.gates[name] {
			out = append(out, fmt.Sprintf("%s=%t (was %t)", name, o.gates[name], r.gates[name]))
		}
	}
	if !slices.Equal(r.autoApprove.Users, o.autoApprove.Users) || !slices.Equal(r.autoApprove.ClusterNamePatterns, o.autoApprove.ClusterNamePatterns) {
		out = append(out, fmt.Sprintf("auto-approval users %v for clusters %v (was %v for %v)",
			o.autoApprove.Users, o.autoApprove.ClusterNamePatterns, r.autoApprove.Users, r.autoApprove.ClusterNamePatterns))
	}
	return out
}

// describe is r for the log.
func (r running) describe() string {
	s := "enabled feature gates " + strings.Join(r.enabled(), ", ")
	if len(r.autoApprove.Users) > 0 {
		s += fmt.Sprintf("; auto-approval users %v for clusters %v", r.autoApprove.Users, r.autoApprove.ClusterNamePatterns)
	}
	return s
}

// enabled lists the enabled gates, sorted, for messages.
func (r running) enabled() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.gates)) {
		if r.gates[name] {
			out = append(out, name)
		}
	}
	return out
}

// section is one featureGates list of the ClusterManager and the gates the hub implements
// from the OCM component it configures.
type section struct {
	component string
	gates     []operatorv1.FeatureGate
	known     map[string]bool
}

// sections splits the gates the hub knows by OCM component: the work controller's and the
// add-on manager's as in OCM's sets, the registration controller's the rest.
func sections(cm *operatorv1.ClusterManager, known []string) []section {
	work, addon, registration := map[string]bool{}, map[string]bool{}, map[string]bool{}
	workSet, addonSet := featuregates.DefaultHubWorkFeatureGates(), featuregates.DefaultHubAddonManagerFeatureGates()
	for _, name := range known {
		switch f := featuregate.Feature(name); {
		case hasKey(workSet, f):
			work[name] = true
		case hasKey(addonSet, f):
			addon[name] = true
		default:
			registration[name] = true
		}
	}
	s := []section{{component: "Registration", known: registration}, {component: "Work", known: work}, {component: "Addon", known: addon}}
	if c := cm.Spec.RegistrationConfiguration; c != nil {
		s[0].gates = c.FeatureGates
	}
	if c := cm.Spec.WorkConfiguration; c != nil {
		s[1].gates = c.FeatureGates
	}
	if c := cm.Spec.AddOnManagerConfiguration; c != nil {
		s[2].gates = c.FeatureGates
	}
	return s
}

func hasKey(m map[featuregate.Feature]featuregate.FeatureSpec, f featuregate.Feature) bool {
	_, ok := m[f]
	return ok
}

// readSettings takes the settings from cm (nil: none) for a hub knowing the gates known.
func readSettings(cm *operatorv1.ClusterManager, known []string) settings {
	var s settings
	if cm == nil {
		return s
	}
	s.generation = cm.Generation
	for _, sec := range sections(cm, known) {
		s.gates.Read(sec.component, sec.gates, func(name string) bool { return sec.known[name] })
	}
	if c := cm.Spec.RegistrationConfiguration; c != nil {
		users := slices.Clone(c.AutoApproveUsers)
		for _, d := range c.RegistrationDrivers {
			if d.AuthType == operatorv1.CSRAuthType && d.CSR != nil {
				users = append(users, d.CSR.AutoApprovedIdentities...)
			}
		}
		slices.Sort(users)
		s.autoApproveUsers = slices.Compact(users)
	}
	return s
}

// newGate returns a fresh copy of the flags' gate (base.FeatureGates, or the defaults).
func newGate(base featuregate.FeatureGate) (featuregate.MutableFeatureGate, error) {
	if base == nil {
		return manager.NewFeatureGate()
	}
	return base.DeepCopy(), nil
}

// knownGates are the gates of the flags' gate.
func knownGates(base featuregate.FeatureGate) ([]string, error) {
	g, err := newGate(base)
	if err != nil {
		return nil, err
	}
	return featuregates.Known(g), nil
}

// apply returns base with s on top: the flags' gates with the ClusterManager's set over them
// and, with ManagedClusterAutoApproval on, its auto-approval users (for every cluster name
// unless the flags name patterns, as OCM approves any cluster of those users).
func (s settings) apply(base manager.Options) (manager.Options, running, error) {
	gate, err := newGate(base.FeatureGates)
	if err != nil {
		return base, running{}, err
	}
	if err := gate.SetFromMap(s.gates.Overrides); err != nil {
		return base, running{}, fmt.Errorf("ClusterManager feature gates: %w", err)
	}
	opts := base
	opts.FeatureGates = gate
	if len(s.autoApproveUsers) > 0 && gate.Enabled(featuregates.ManagedClusterAutoApproval) {
		patterns := base.AutoApprove.ClusterNamePatterns
		if len(patterns) == 0 {
			patterns = []string{"*"}
		}
		opts.AutoApprove = plugininstall.AutoApprove{Users: s.autoApproveUsers, ClusterNamePatterns: patterns}
	}
	r := running{gates: map[string]bool{}, autoApprove: opts.AutoApprove}
	for _, name := range featuregates.Known(gate) {
		r.gates[name] = gate.Enabled(featuregate.Feature(name))
	}
	return opts, r, nil
}

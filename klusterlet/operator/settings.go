package operator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// gates are the feature gates the klusterlet implements and the options they switch; the
// flags set the same options (cmd/flotilla's klusterletFeatureGates).
var gates = map[featuregate.Feature]struct {
	get func(*klusterlet.Options) bool
	set func(*klusterlet.Options, bool)
}{
	featuregates.AddonManagement: {
		get: func(o *klusterlet.Options) bool { return !o.AddOn.Disabled },
		set: func(o *klusterlet.Options, on bool) { o.AddOn.Disabled = !on },
	},
	featuregates.ExecutorValidatingCaches: {
		get: func(o *klusterlet.Options) bool { return o.Work.ExecutorValidatingCaches },
		set: func(o *klusterlet.Options, on bool) { o.Work.ExecutorValidatingCaches = on },
	},
	featuregates.RawFeedbackJsonString: {
		get: func(o *klusterlet.Options) bool { return o.Work.RawFeedbackJSON },
		set: func(o *klusterlet.Options, on bool) { o.Work.RawFeedbackJSON = on },
	},
}

// settings is what the klusterlet takes from a Klusterlet.
type settings struct {
	// generation is the Klusterlet's metadata.generation; 0 without one.
	generation int64
	// clusterName and namespace are spec.clusterName and spec.namespace; empty leaves the flags'.
	clusterName, namespace string
	// gates are the featureGates entries, per agent.
	gates operatorrun.FeatureGates
	// alias is spec.hubApiServerHostAlias.
	alias operatorv1.HubApiServerHostAlias
}

// running is the configuration the agents run with; a change restarts them.
type running struct {
	clusterName, namespace string
	gates                  map[string]bool
	alias                  operatorv1.HubApiServerHostAlias
}

func (r running) equal(o running) bool {
	return r.clusterName == o.clusterName && r.namespace == o.namespace && r.alias == o.alias && maps.Equal(r.gates, o.gates)
}

// diff describes what changed from r to o, for the log.
func (r running) diff(o running) []string {
	var out []string
	if r.clusterName != o.clusterName {
		out = append(out, fmt.Sprintf("cluster name %q (was %q)", o.clusterName, r.clusterName))
	}
	if r.namespace != o.namespace {
		out = append(out, fmt.Sprintf("agent namespace %s (was %s)", o.namespace, r.namespace))
	}
	for _, name := range slices.Sorted(maps.Keys(o.gates)) {
		if r.gates[name] != o.gates[name] {
			out = append(out, fmt.Sprintf("%s=%t (was %t)", name, o.gates[name], r.gates[name]))
		}
	}
	if r.alias != o.alias {
		out = append(out, fmt.Sprintf("hub API server host alias %s (was %s)", aliasString(o.alias), aliasString(r.alias)))
	}
	return out
}

// describe is r for messages.
func (r running) describe() string {
	var on []string
	for _, name := range slices.Sorted(maps.Keys(r.gates)) {
		on = append(on, fmt.Sprintf("%s=%t", name, r.gates[name]))
	}
	s := fmt.Sprintf("cluster %q, agent namespace %s, feature gates %s", r.clusterName, r.namespace, strings.Join(on, ","))
	if r.alias.Hostname != "" {
		s += ", hub API server host alias " + aliasString(r.alias)
	}
	return s
}

func aliasString(a operatorv1.HubApiServerHostAlias) string {
	if a.Hostname == "" {
		return "none"
	}
	return a.Hostname + "=" + a.IP
}

// readSettings takes the settings from k (nil: none).
func readSettings(k *operatorv1.Klusterlet) settings {
	var s settings
	if k == nil {
		return s
	}
	s.generation, s.clusterName, s.namespace = k.Generation, k.Spec.ClusterName, k.Spec.Namespace
	if a := k.Spec.HubApiServerHostAlias; a != nil {
		s.alias = *a
	}
	var registrationGates, workGates []operatorv1.FeatureGate
	if c := k.Spec.RegistrationConfiguration; c != nil {
		registrationGates = c.FeatureGates
	}
	if c := k.Spec.WorkConfiguration; c != nil {
		workGates = c.FeatureGates
	}
	// Each list takes the gates the klusterlet implements of that OCM agent's set.
	for _, sec := range []struct {
		component string
		gates     []operatorv1.FeatureGate
		set       map[featuregate.Feature]featuregate.FeatureSpec
	}{
		{"Registration", registrationGates, featuregates.DefaultSpokeRegistrationFeatureGates()},
		{"Work", workGates, featuregates.DefaultSpokeWorkFeatureGates()},
	} {
		s.gates.Read(sec.component, sec.gates, func(name string) bool {
			_, inSet := sec.set[featuregate.Feature(name)]
			_, known := gates[featuregate.Feature(name)]
			return known && inSet
		})
	}
	return s
}

// apply returns base (the flags) with s on top.
func (s settings) apply(base klusterlet.Options) (klusterlet.Options, running) {
	opts := base
	if s.clusterName != "" {
		opts.Registration.ClusterName = s.clusterName
	}
	if s.namespace != "" {
		opts.Registration.AgentNamespace = s.namespace
	}
	for name, on := range s.gates.Overrides {
		gates[featuregate.Feature(name)].set(&opts, on)
	}
	if s.alias.Hostname != "" {
		opts.Registration.HubDial = aliasDial(s.alias, base.Registration.HubDial)
	}
	r := running{
		clusterName: opts.Registration.ClusterName,
		namespace:   cmp.Or(opts.Registration.AgentNamespace, registration.DefaultAgentNamespace),
		gates:       map[string]bool{},
		alias:       s.alias,
	}
	for f, g := range gates {
		r.gates[string(f)] = g.get(&opts)
	}
	return opts, r
}

// aliasDial sends connections to alias.Hostname to alias.IP, as the hosts-file entry OCM's
// operator gives the agents' Pods would; others, and the dialing, go to next (nil: a
// net.Dialer). TLS still verifies the host name, as with the hosts-file entry.
func aliasDial(alias operatorv1.HubApiServerHostAlias, next registration.DialFunc) registration.DialFunc {
	if next == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		next = d.DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(address); err == nil && strings.EqualFold(strings.TrimSuffix(host, "."), alias.Hostname) {
			address = net.JoinHostPort(alias.IP, port)
		}
		return next(ctx, network, address)
	}
}

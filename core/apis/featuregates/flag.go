package featuregates

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

// FlagName is the flag gates are set with, as in OCM.
const FlagName = "feature-gates"

// component-base's meta gates, known to every gate. They are not offered: AllAlpha=true
// would quietly switch on ManagedClusterAutoApproval and whatever alpha gate comes next.
const (
	allAlpha featuregate.Feature = "AllAlpha"
	allBeta  featuregate.Feature = "AllBeta"
)

// Known returns the names of the gates gate offers, sorted.
func Known(gate featuregate.MutableFeatureGate) []string {
	var names []string
	for name := range gate.GetAll() {
		if name != allAlpha && name != allBeta {
			names = append(names, string(name))
		}
	}
	slices.Sort(names)
	return names
}

// AddFlag adds --feature-gates to fs, setting gate. Unlike component-base's own flag it
// accepts only gate's gates, and an unknown one is an error that names it and lists the
// known ones.
func AddFlag(fs *pflag.FlagSet, gate featuregate.MutableFeatureGate) {
	v := &flagValue{gate: gate, known: Known(gate)}
	all := gate.GetAll()
	lines := make([]string, 0, len(v.known))
	for _, name := range v.known {
		spec := all[featuregate.Feature(name)]
		lines = append(lines, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.PreRelease, spec.Default))
	}
	fs.Var(v, FlagName, "comma-separated Name=true|false pairs switching feature gates; known gates:\n"+strings.Join(lines, "\n"))
}

type flagValue struct {
	gate  featuregate.MutableFeatureGate
	known []string
	set   []string // values given, for String
}

func (v *flagValue) Set(value string) error {
	var unknown []string
	for pair := range strings.SplitSeq(value, ",") {
		name, _, _ := strings.Cut(pair, "=")
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(v.known, name) {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	switch len(unknown) {
	case 0:
		if err := v.gate.Set(value); err != nil {
			return err
		}
		v.set = append(v.set, value)
		return nil
	case 1:
		return fmt.Errorf("unknown feature gate %s (known gates: %s)", unknown[0], strings.Join(v.known, ", "))
	default:
		return fmt.Errorf("unknown feature gates %s (known gates: %s)", strings.Join(unknown, ", "), strings.Join(v.known, ", "))
	}
}

func (v *flagValue) String() string { return strings.Join(v.set, ",") }

func (v *flagValue) Type() string { return "mapStringBool" }

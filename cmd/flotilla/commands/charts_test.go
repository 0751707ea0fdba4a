package commands

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/featuregate"

	"github.com/flotilla-dev/flotilla/core/apis/featuregates"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// The charts pass the binary's flags through their values' `flags` (or set them themselves,
// the chart-owned flags): a flag added, renamed or with a new default must show in the charts.
func TestChartFlagsMatchTheCommands(t *testing.T) {
	hubGate, err := manager.NewFeatureGate()
	if err != nil {
		t.Fatal(err)
	}
	klusterletGate, err := featuregates.NewGate(klusterletFeatureGates())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chart string
		cmd   *cobra.Command
		owned []string
		gate  featuregate.MutableFeatureGate
	}{
		{install.HubChart, newHubCommand(), install.HubChartOwnedFlags, hubGate},
		{install.KlusterletChart, newKlusterletCommand(), install.KlusterletChartOwnedFlags, klusterletGate},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			c, err := install.Load(tc.chart)
			if err != nil {
				t.Fatal(err)
			}
			values, ok := c.Values["flags"].(map[string]any)
			if !ok {
				t.Fatalf("values.yaml has no flags map")
			}
			flags := map[string]*pflag.Flag{}
			tc.cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" {
					flags[f.Name] = f
				}
			})
			for _, name := range slices.Sorted(maps.Keys(flags)) {
				f := flags[name]
				v, inValues := values[name]
				owned := slices.Contains(tc.owned, name)
				switch {
				case inValues && owned:
					t.Errorf("--%s is both chart-owned and in values.yaml flags", name)
				case !inValues && !owned:
					t.Errorf("--%s (default %q) is neither in values.yaml flags nor chart-owned: add it to charts/%s/values.yaml and values.schema.json", name, f.DefValue, tc.chart)
				case inValues:
					if err := sameDefault(f, v); err != nil {
						t.Errorf("flags.%s in values.yaml: %v", name, err)
					}
				}
			}
			for _, name := range slices.Sorted(maps.Keys(values)) {
				if _, ok := flags[name]; !ok {
					t.Errorf("values.yaml flags.%s is no flag of `flotilla %s`", name, tc.cmd.Name())
				}
			}
			for _, name := range tc.owned {
				if _, ok := flags[name]; !ok {
					t.Errorf("chart-owned --%s is no flag of `flotilla %s`", name, tc.cmd.Name())
				}
			}
			checkSchema(t, c.Schema, values, tc.gate)
		})
	}
}

// sameDefault compares a flag's default with its value in values.yaml, by the flag's type.
func sameDefault(f *pflag.Flag, v any) error {
	def := f.DefValue
	switch f.Value.Type() {
	case featuregates.FlagName, "mapStringBool":
		// The gates' defaults are the binary's; values.yaml leaves them out ({}), and
		// checkSchema compares the gates themselves.
		m, ok := v.(map[string]any)
		if !ok || len(m) != 0 {
			return fmt.Errorf("%v, want {} (the binary's gate defaults)", v)
		}
		return nil
	case "stringSlice", "stringArray":
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%v (%T), want a list", v, v)
		}
		got := make([]string, 0, len(list))
		for _, e := range list {
			got = append(got, fmt.Sprint(e))
		}
		want := strings.Split(strings.Trim(def, "[]"), ",")
		if strings.Trim(def, "[]") == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%v, want %v (--%s default %s)", got, want, f.Name, def)
		}
	case "duration":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v (%T), want a duration string", v, v)
		}
		got, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		want, err := time.ParseDuration(def)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s, want %s", got, want)
		}
	case "int", "int32", "int64", "uint", "uint32", "float32", "float64":
		got, ok := v.(float64) // Helm reads values.yaml numbers as float64
		if !ok {
			return fmt.Errorf("%v (%T), want a number", v, v)
		}
		want, err := strconv.ParseFloat(def, 64)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%v, want %v", got, want)
		}
	case "bool":
		got, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%v (%T), want a bool", v, v)
		}
		if strconv.FormatBool(got) != def {
			return fmt.Errorf("%t, want %s", got, def)
		}
	case "string":
		got, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v (%T), want a string", v, v)
		}
		if got != def {
			return fmt.Errorf("%q, want %q", got, def)
		}
	default:
		return fmt.Errorf("flag type %s is not compared: teach sameDefault", f.Value.Type())
	}
	return nil
}

// checkSchema checks values.schema.json describes exactly the values' flags, and for
// feature-gates exactly the command's gates, each with its default in the description.
func checkSchema(t *testing.T, raw []byte, values map[string]any, gate featuregate.MutableFeatureGate) {
	t.Helper()
	type prop struct {
		Description string          `json:"description"`
		Properties  map[string]prop `json:"properties"`
	}
	var s struct {
		Properties map[string]prop `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	flags := s.Properties["flags"].Properties
	if got, want := slices.Sorted(maps.Keys(flags)), slices.Sorted(maps.Keys(values)); !slices.Equal(got, want) {
		t.Errorf("values.schema.json flags %v, values.yaml flags %v", got, want)
	}
	gates := flags[featuregates.FlagName].Properties
	known := featuregates.Known(gate)
	if got := slices.Sorted(maps.Keys(gates)); !slices.Equal(got, known) {
		t.Errorf("values.schema.json feature gates %v, the command's %v", got, known)
	}
	all := gate.GetAll()
	for _, name := range known {
		want := fmt.Sprintf("(default %t)", all[featuregate.Feature(name)].Default)
		if p, ok := gates[name]; ok && !strings.Contains(p.Description, want) {
			t.Errorf("values.schema.json feature gate %s: description %q lacks %q", name, p.Description, want)
		}
	}
}

// The args the charts' Deployments pass parse as the commands' flags, with default values and
// with values that set lists, feature gates, numbers and leader election.
func TestChartArgsParse(t *testing.T) {
	for _, tc := range []struct {
		chart, namespace string
		cmd              func() *cobra.Command
		values           map[string]any
	}{
		{install.HubChart, install.HubNamespace, newHubCommand, map[string]any{"render": "components", "topology": "Single"}},
		{install.HubChart, install.HubNamespace, newHubCommand, map[string]any{"render": "components", "topology": "Split"}},
		{install.HubChart, "open-cluster-management", newOperatorCommand, nil},
		{install.HubChart, install.HubNamespace, newHubCommand, map[string]any{
			"render": "components", "topology": "Single", "replicas": 3,
			"flags": map[string]any{
				"kube-api-qps": 50.5, "autoapprove-cluster-patterns": []any{"dev-*", "test-*"}, "autoapprove-users": []any{"system:serviceaccount:a:b"},
				"feature-gates": map[string]any{"ManifestWorkReplicaSet": false, "ManagedClusterAutoApproval": true},
			},
		}},
		{install.KlusterletChart, install.AgentNamespace, newKlusterletCommand, map[string]any{"render": "components", "clusterName": "cluster1"}},
		// The klusterlet chart's default: `flotilla operator klusterlet`.
		{install.KlusterletChart, install.AgentNamespace, newOperatorCommand, map[string]any{"clusterName": "cluster1"}},
		{install.KlusterletChart, install.AgentNamespace, newKlusterletCommand, map[string]any{
			"render": "components", "clusterName": "cluster1", "replicas": 2,
			"flags": map[string]any{"feature-gates": map[string]any{"RawFeedbackJsonString": true}, "status-sync-interval": "5s", "disable-work-agent": true},
		}},
	} {
		objs, err := install.Render(tc.chart, "r", tc.namespace, tc.values)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args := containers[0].(map[string]any)["args"].([]any)
			cmd := tc.cmd()
			if args[0] != cmd.Name() {
				t.Errorf("%s: first arg %v, want %s", tc.chart, args[0], cmd.Name())
			}
			rest, hub := args[1:], cmd.Name() == "hub"
			if cmd.Name() == "operator" {
				// `flotilla operator hub|klusterlet`: the flags are the subcommand's.
				sub, _, err := cmd.Find([]string{rest[0].(string)})
				if err != nil || sub == cmd {
					t.Fatalf("%s: `flotilla operator %v` is no command: %v", tc.chart, rest[0], err)
				}
				cmd, rest = sub, rest[1:]
			}
			flags := make([]string, 0, len(rest))
			for _, a := range rest {
				flags = append(flags, a.(string))
			}
			if hub && slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "--cluster-manager-name") }) {
				t.Errorf("%s with %v: the hub Deployment %s passes the deprecated --cluster-manager-name: %v", tc.chart, tc.values, o.GetName(), flags)
			}
			if err := cmd.ParseFlags(flags); err != nil {
				t.Errorf("%s with %v: `flotilla %s` rejects %v: %v", tc.chart, tc.values, cmd.Name(), flags, err)
			}
		}
	}
}

// Deployments rendered before the chart stopped passing --cluster-manager-name still pass it
// until they are re-rendered: `flotilla hub` accepts and ignores it, and its help hides it.
func TestHubAcceptsDeprecatedClusterManagerName(t *testing.T) {
	cmd := newHubCommand()
	if err := cmd.ParseFlags([]string{"--components=all", "--cluster-manager-name=cluster-manager"}); err != nil {
		t.Fatalf("`flotilla hub --cluster-manager-name=cluster-manager` (an old Deployment's args): %v", err)
	}
	if err := cmd.ParseFlags([]string{"--cluster-manager-name="}); err != nil {
		t.Fatalf("`flotilla hub --cluster-manager-name=` (an old operator-rendered Deployment's args): %v", err)
	}
	f := cmd.Flags().Lookup("cluster-manager-name")
	if f == nil || f.Deprecated == "" {
		t.Fatalf("--cluster-manager-name is not marked deprecated: %+v", f)
	}
	if strings.Contains(cmd.Flags().FlagUsages(), "cluster-manager-name") {
		t.Errorf("`flotilla hub --help` shows the deprecated --cluster-manager-name")
	}
}

// TestKlusterletAcceptsDeprecatedKlusterletName: agent Deployments rendered before the
// klusterlet operator pass --klusterlet-name; a newer binary must still start from them.
func TestKlusterletAcceptsDeprecatedKlusterletName(t *testing.T) {
	cmd := newKlusterletCommand()
	if err := cmd.ParseFlags([]string{"--klusterlet-name=klusterlet"}); err != nil {
		t.Fatalf("`flotilla klusterlet --klusterlet-name=klusterlet` (an old Deployment's args): %v", err)
	}
	f := cmd.Flags().Lookup("klusterlet-name")
	if f == nil || f.Deprecated == "" {
		t.Fatalf("--klusterlet-name is not marked deprecated: %+v", f)
	}
	if strings.Contains(cmd.Flags().FlagUsages(), "klusterlet-name") {
		t.Errorf("`flotilla klusterlet --help` shows the deprecated --klusterlet-name")
	}
}

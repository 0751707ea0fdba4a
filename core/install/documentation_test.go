package install_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/core/install"
)

// groups are values.yaml keys that only group documented keys.
var groups = []string{"image", "leaderElection", "metrics", "health", "webhook", "clusterManager", "klusterlet", "rbac", "builtinAddons", "addons", "dashboard", "flags"}

// TestValuesAreDocumented checks that every value of values.yaml (top-level keys and the keys
// of the groups) has a comment right above it that states its default.
func TestValuesAreDocumented(t *testing.T) {
	key := regexp.MustCompile(`^( *)([A-Za-z][-A-Za-z0-9]*):`)
	for _, name := range []string{install.HubChart, install.KlusterletChart} {
		t.Run(name, func(t *testing.T) {
			c, err := install.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			var raw []byte
			for _, f := range c.Raw {
				if f.Name == "values.yaml" {
					raw = f.Data
				}
			}
			if raw == nil {
				t.Fatal("no values.yaml")
			}
			var comment []string
			parent := ""
			checked := 0
			sc := bufio.NewScanner(bytes.NewReader(raw))
			for sc.Scan() {
				line := sc.Text()
				trimmed := strings.TrimSpace(line)
				if strings.HasPrefix(trimmed, "#") {
					comment = append(comment, trimmed)
					continue
				}
				m := key.FindStringSubmatch(line)
				if m == nil {
					comment = nil
					continue
				}
				indent, k := len(m[1]), m[2]
				path := k
				switch {
				case indent == 0:
					parent = k
				case indent == 2 && slices.Contains(groups, parent):
					path = parent + "." + k
				default:
					comment = nil
					continue // inside a documented value (resources.requests, ...)
				}
				if indent == 0 && slices.Contains(groups, k) {
					comment = nil
					continue
				}
				checked++
				if !strings.Contains(strings.Join(comment, " "), "Default") {
					t.Errorf("values.yaml %s has no comment stating its default", path)
				}
				comment = nil
			}
			if checked < 20 {
				t.Errorf("only %d values checked", checked)
			}
		})
	}
}

// TestSchemaTypesAndDescribesEveryValue checks values.schema.json: draft-07, every property
// typed and described, unknown keys rejected wherever properties are listed, and every value
// of values.yaml declared.
func TestSchemaTypesAndDescribesEveryValue(t *testing.T) {
	for _, name := range []string{install.HubChart, install.KlusterletChart} {
		t.Run(name, func(t *testing.T) {
			c, err := install.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			var schema map[string]any
			if err := json.Unmarshal(c.Schema, &schema); err != nil {
				t.Fatal(err)
			}
			if schema["$schema"] != "http://json-schema.org/draft-07/schema#" {
				t.Errorf("$schema %v, want draft-07", schema["$schema"])
			}
			var walk func(path string, s map[string]any)
			walk = func(path string, s map[string]any) {
				props, ok := s["properties"].(map[string]any)
				if !ok {
					return
				}
				if s["additionalProperties"] != false {
					t.Errorf("%s: additionalProperties is %v, want false", path, s["additionalProperties"])
				}
				for k, p := range props {
					p := p.(map[string]any)
					if p["type"] == nil {
						t.Errorf("%s.%s has no type", path, k)
					}
					if d, _ := p["description"].(string); d == "" {
						t.Errorf("%s.%s has no description", path, k)
					}
					walk(path+"."+k, p)
				}
			}
			walk("", schema)

			// Every value of values.yaml is declared down to where the schema stops listing
			// properties (Kubernetes types: resources, affinity, ...).
			var declared func(path string, v any, s map[string]any)
			declared = func(path string, v any, s map[string]any) {
				m, ok := v.(map[string]any)
				props, listed := s["properties"].(map[string]any)
				if !ok || !listed {
					return
				}
				for k, sub := range m {
					p, ok := props[k].(map[string]any)
					if !ok {
						t.Errorf("values.yaml %s%s is not in values.schema.json", path, k)
						continue
					}
					declared(path+k+".", sub, p)
				}
			}
			declared("", c.Values, schema)
		})
	}
}

// TestSchemaFollowsTheCRDs checks that the values' ClusterManager and Klusterlet specs offer
// exactly the fields of the CRDs (less those the chart sets), so a new API field shows up.
func TestSchemaFollowsTheCRDs(t *testing.T) {
	for _, tc := range []struct {
		chart, crd string
		path       []string // to the spec in values.schema.json
		chartSets  []string
		nested     []string // spec fields whose own fields the schema lists too
	}{
		{install.HubChart, "clustermanagers.operator.open-cluster-management.io", []string{"clusterManager", "spec"}, nil,
			[]string{"registrationConfiguration", "workConfiguration", "addOnManagerConfiguration", "placementConfiguration"}},
		{install.KlusterletChart, "klusterlets.operator.open-cluster-management.io", []string{"klusterlet", "spec"}, []string{"clusterName", "namespace"},
			[]string{"hubApiServerHostAlias"}},
	} {
		t.Run(tc.chart, func(t *testing.T) {
			c, err := install.Load(tc.chart)
			if err != nil {
				t.Fatal(err)
			}
			var schema map[string]any
			if err := json.Unmarshal(c.Schema, &schema); err != nil {
				t.Fatal(err)
			}
			spec := schema
			for _, p := range tc.path {
				spec = spec["properties"].(map[string]any)[p].(map[string]any)
			}
			var crdSpec map[string]any
			for _, f := range c.CRDObjects() {
				var crd struct {
					Metadata struct{ Name string } `json:"metadata"`
					Spec     struct {
						Versions []struct {
							Name   string `json:"name"`
							Schema struct {
								OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
							} `json:"schema"`
						} `json:"versions"`
					} `json:"spec"`
				}
				if err := yaml.Unmarshal(f.File.Data, &crd); err != nil {
					t.Fatal(err)
				}
				if crd.Metadata.Name == tc.crd {
					crdSpec = crd.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"].(map[string]any)["spec"].(map[string]any)
				}
			}
			if crdSpec == nil {
				t.Fatalf("the chart has no CRD %s", tc.crd)
			}
			keys := func(s map[string]any, drop []string) []string {
				props, _ := s["properties"].(map[string]any)
				var out []string
				for k := range props {
					if !slices.Contains(drop, k) {
						out = append(out, k)
					}
				}
				slices.Sort(out)
				return out
			}
			if got, want := keys(spec, nil), keys(crdSpec, tc.chartSets); !slices.Equal(got, want) {
				t.Errorf("values.schema.json %s offers %v, the CRD's spec has %v", strings.Join(tc.path, "."), got, want)
			}
			for _, n := range tc.nested {
				sub, _ := spec["properties"].(map[string]any)[n].(map[string]any)
				crdSub, _ := crdSpec["properties"].(map[string]any)[n].(map[string]any)
				if got, want := keys(sub, nil), keys(crdSub, nil); !slices.Equal(got, want) {
					t.Errorf("values.schema.json %s.%s offers %v, the CRD has %v", strings.Join(tc.path, "."), n, got, want)
				}
			}
		})
	}
}

package addon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/rollout"
)

// Group/resources used throughout. secretsGR is a core-group resource, so that it sorts first.
var (
	adcGR     = AddOnDeploymentConfigResource
	tmplGR    = AddOnTemplateResource
	secretsGR = addonv1alpha1.ConfigGroupResource{Group: "", Resource: "secrets"}
)

func referent(ns, name string) addonv1alpha1.ConfigReferent {
	return addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}
}

func hashOf(ns, name, h string) *addonv1alpha1.ConfigSpecHash {
	return &addonv1alpha1.ConfigSpecHash{ConfigReferent: referent(ns, name), SpecHash: h}
}

func addOnConfig(gr addonv1alpha1.ConfigGroupResource, ns, name string) addonv1alpha1.AddOnConfig {
	return addonv1alpha1.AddOnConfig{ConfigGroupResource: gr, ConfigReferent: referent(ns, name)}
}

func entry(ns, name, defaultNamespace string) configEntry {
	return configEntry{ConfigReferent: referent(ns, name), defaultNamespace: defaultNamespace}
}

// resolved is a resolved configuration whose object has the given generation (0: unset).
func resolved(gr addonv1alpha1.ConfigGroupResource, ns, name, h string, generation int64) resolvedConfig {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetName(name)
	obj.SetNamespace(ns)
	if generation > 0 {
		obj.SetGeneration(generation)
	}
	return resolvedConfig{ConfigGroupResource: gr, ConfigSpecHash: *hashOf(ns, name, h), Object: obj}
}

// desiredRef is a ConfigReference as desiredReferences writes it (referent = desired's).
func desiredRef(gr addonv1alpha1.ConfigGroupResource, desired, lastApplied *addonv1alpha1.ConfigSpecHash, gen int64) addonv1alpha1.ConfigReference {
	r := addonv1alpha1.ConfigReference{ConfigGroupResource: gr, DesiredConfig: desired, LastAppliedConfig: lastApplied, LastObservedGeneration: gen}
	if desired != nil {
		r.ConfigReferent = desired.ConfigReferent
	}
	return r
}

func cmaWith(annotations map[string]string, supported ...addonv1alpha1.ConfigMeta) *addonv1alpha1.ClusterManagementAddOn {
	cma := &addonv1alpha1.ClusterManagementAddOn{}
	cma.Name = "hello"
	cma.Annotations = annotations
	cma.Spec.SupportedConfigs = supported
	return cma
}

func supported(gr addonv1alpha1.ConfigGroupResource, def *addonv1alpha1.ConfigReferent) addonv1alpha1.ConfigMeta {
	return addonv1alpha1.ConfigMeta{ConfigGroupResource: gr, DefaultConfig: def}
}

func ptrTo[T any](v T) *T { return &v }

func TestManaged(t *testing.T) {
	lifecycle := addonv1alpha1.AddonLifecycleAnnotationKey
	tests := []struct {
		name string
		cma  *addonv1alpha1.ClusterManagementAddOn
		want bool
	}{
		{"nothing", cmaWith(nil), false},
		{"addon-manager lifecycle", cmaWith(map[string]string{lifecycle: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}), true},
		{"self lifecycle", cmaWith(map[string]string{lifecycle: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}), false},
		{"deployment configs only", cmaWith(nil, supported(adcGR, nil)), false},
		{"AddOnTemplate", cmaWith(nil, supported(adcGR, nil), supported(tmplGR, nil)), true},
		{"WasmPlugin", cmaWith(nil, supported(WasmPluginResource, nil)), true},
		{"template add-on with self lifecycle", cmaWith(map[string]string{lifecycle: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}, supported(tmplGR, nil)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := managed(tt.cma); got != tt.want {
				t.Errorf("managed() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTemplateKind(t *testing.T) {
	tests := []struct {
		name string
		cma  *addonv1alpha1.ClusterManagementAddOn
		want addonv1alpha1.ConfigGroupResource
	}{
		{"none", cmaWith(nil), addonv1alpha1.ConfigGroupResource{}},
		{"deployment configs only", cmaWith(nil, supported(adcGR, nil)), addonv1alpha1.ConfigGroupResource{}},
		{"AddOnTemplate after a deployment config", cmaWith(nil, supported(adcGR, nil), supported(tmplGR, nil)), tmplGR},
		{"WasmPlugin", cmaWith(nil, supported(WasmPluginResource, nil)), WasmPluginResource},
		{"the first template kind listed", cmaWith(nil, supported(WasmPluginResource, nil), supported(tmplGR, nil)), WasmPluginResource},
		{"wasmplugins of another group", cmaWith(nil, supported(addonv1alpha1.ConfigGroupResource{Group: "example.com", Resource: "wasmplugins"}, nil)), addonv1alpha1.ConfigGroupResource{}},
		{"addontemplates of another group", cmaWith(nil, supported(addonv1alpha1.ConfigGroupResource{Group: "flotilla.dev", Resource: "addontemplates"}, nil)), addonv1alpha1.ConfigGroupResource{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := templateKind(tt.cma); got != tt.want {
				t.Errorf("templateKind() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHealthMode(t *testing.T) {
	tests := []struct {
		annotation *string
		want       string
	}{
		{nil, HealthWorkloadAvailability},
		{ptrTo(""), HealthWorkloadAvailability},
		{ptrTo(HealthWorkloadAvailability), HealthWorkloadAvailability},
		{ptrTo(HealthDeploymentAvailability), HealthDeploymentAvailability},
		{ptrTo(HealthLease), HealthLease},
		{ptrTo(HealthNone), HealthNone},
		{ptrTo("lease"), HealthWorkloadAvailability}, // case matters
		{ptrTo("Customized"), HealthWorkloadAvailability},
	}
	for _, tt := range tests {
		name := "<unset>"
		var ann map[string]string
		if tt.annotation != nil {
			name = "=" + *tt.annotation
			ann = map[string]string{HealthCheckAnnotation: *tt.annotation}
		}
		t.Run(name, func(t *testing.T) {
			if got := healthMode(cmaWith(ann)); got != tt.want {
				t.Errorf("healthMode() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConfigPrecedence checks what the ConfigReconciler computes for one ManagedClusterAddOn:
// placementConfigs(cma, ps) overridden by the add-on's spec.configs.
func TestConfigPrecedence(t *testing.T) {
	cma := cmaWith(nil,
		supported(adcGR, ptrTo(referent("defaults", "adc-default"))),
		supported(tmplGR, ptrTo(referent("", "tmpl-v1"))),
		supported(secretsGR, nil), // no default: absent unless configured
	)
	placement := func(configs ...addonv1alpha1.AddOnConfig) *addonv1alpha1.PlacementStrategy {
		return &addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "pl-ns", Name: "pl"}, Configs: configs}
	}
	const clusterNS = "cluster1"
	tests := []struct {
		name string
		ps   *addonv1alpha1.PlacementStrategy
		mca  []addonv1alpha1.AddOnConfig
		want configList
	}{{
		name: "defaults only, with no default namespace",
		want: configList{adcGR: {entry("defaults", "adc-default", "")}, tmplGR: {entry("", "tmpl-v1", "")}},
	}, {
		name: "a placement without configs keeps the defaults",
		ps:   placement(),
		want: configList{adcGR: {entry("defaults", "adc-default", "")}, tmplGR: {entry("", "tmpl-v1", "")}},
	}, {
		name: "the placement replaces one group/resource, with its namespace as default",
		ps:   placement(addOnConfig(adcGR, "", "adc-placement")),
		want: configList{adcGR: {entry("", "adc-placement", "pl-ns")}, tmplGR: {entry("", "tmpl-v1", "")}},
	}, {
		name: "the add-on's configs replace the placement's, with the cluster namespace as default",
		ps:   placement(addOnConfig(adcGR, "", "adc-placement"), addOnConfig(tmplGR, "", "tmpl-v2")),
		mca:  []addonv1alpha1.AddOnConfig{addOnConfig(adcGR, "", "adc-mine")},
		want: configList{adcGR: {entry("", "adc-mine", clusterNS)}, tmplGR: {entry("", "tmpl-v2", "pl-ns")}},
	}, {
		name: "the add-on's configs replace a default not in the placement",
		ps:   placement(addOnConfig(adcGR, "other", "adc-placement")),
		mca:  []addonv1alpha1.AddOnConfig{addOnConfig(tmplGR, "", "tmpl-mine")},
		want: configList{adcGR: {entry("other", "adc-placement", "pl-ns")}, tmplGR: {entry("", "tmpl-mine", clusterNS)}},
	}, {
		name: "the add-on's configs over the defaults with no placement",
		mca:  []addonv1alpha1.AddOnConfig{addOnConfig(adcGR, "explicit", "adc-mine")},
		want: configList{adcGR: {entry("explicit", "adc-mine", clusterNS)}, tmplGR: {entry("", "tmpl-v1", "")}},
	}, {
		name: "several per group/resource replace the lower level's and keep their order",
		ps:   placement(addOnConfig(adcGR, "", "p1"), addOnConfig(tmplGR, "", "t1"), addOnConfig(adcGR, "", "p2")),
		want: configList{adcGR: {entry("", "p1", "pl-ns"), entry("", "p2", "pl-ns")}, tmplGR: {entry("", "t1", "pl-ns")}},
	}, {
		name: "one add-on config replaces several of the placement's",
		ps:   placement(addOnConfig(adcGR, "", "p1"), addOnConfig(adcGR, "", "p2")),
		mca:  []addonv1alpha1.AddOnConfig{addOnConfig(adcGR, "", "m1")},
		want: configList{adcGR: {entry("", "m1", clusterNS)}, tmplGR: {entry("", "tmpl-v1", "")}},
	}, {
		name: "several add-on configs replace one of the placement's, in order",
		ps:   placement(addOnConfig(adcGR, "", "p1")),
		mca:  []addonv1alpha1.AddOnConfig{addOnConfig(adcGR, "", "m2"), addOnConfig(adcGR, "x", "m1")},
		want: configList{adcGR: {entry("", "m2", clusterNS), entry("x", "m1", clusterNS)}, tmplGR: {entry("", "tmpl-v1", "")}},
	}, {
		name: "a group/resource without a default is added by a lower level",
		ps:   placement(addOnConfig(secretsGR, "", "s1")),
		mca:  []addonv1alpha1.AddOnConfig{addOnConfig(secretsGR, "", "s2"), addOnConfig(secretsGR, "", "s3")},
		want: configList{
			adcGR: {entry("defaults", "adc-default", "")}, tmplGR: {entry("", "tmpl-v1", "")},
			secretsGR: {entry("", "s2", clusterNS), entry("", "s3", clusterNS)},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := placementConfigs(cma, tt.ps)
			got.override(tt.mca, clusterNS)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("configurations:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	// The defaults are read afresh: no case above changed them.
	if got, want := defaults(cma), (configList{adcGR: {entry("defaults", "adc-default", "")}, tmplGR: {entry("", "tmpl-v1", "")}}); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults() = %+v, want %+v", got, want)
	}
}

func TestConfigListKeys(t *testing.T) {
	l := configList{
		{Group: "b.io", Resource: "a"}:      nil,
		{Group: "a.io", Resource: "zebras"}: nil,
		{Group: "", Resource: "secrets"}:    nil,
		{Group: "a.io", Resource: "apples"}: nil,
		{Group: "", Resource: "configmaps"}: nil,
		{Group: "c.io", Resource: "m"}:      nil,
	}
	want := []addonv1alpha1.ConfigGroupResource{
		{Group: "", Resource: "configmaps"}, {Group: "", Resource: "secrets"},
		{Group: "a.io", Resource: "apples"}, {Group: "a.io", Resource: "zebras"},
		{Group: "b.io", Resource: "a"}, {Group: "c.io", Resource: "m"},
	}
	for range 20 { // map order varies from one iteration to the next
		if got := l.keys(); !reflect.DeepEqual(got, want) {
			t.Fatalf("keys() = %+v, want %+v", got, want)
		}
	}
	if got := (configList{}).keys(); len(got) != 0 {
		t.Errorf("keys() of an empty list = %+v", got)
	}
}

func TestConfigListClone(t *testing.T) {
	l := configList{adcGR: {entry("", "a", "ns")}}
	c := l.clone()
	c[adcGR][0].Name = "changed"
	c.override([]addonv1alpha1.AddOnConfig{addOnConfig(tmplGR, "", "t")}, "")
	if !reflect.DeepEqual(l, configList{adcGR: {entry("", "a", "ns")}}) {
		t.Errorf("changing a clone changed the original: %+v", l)
	}
}

func TestSpecHash(t *testing.T) {
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	decode := func(t *testing.T, doc string) *unstructured.Unstructured {
		t.Helper()
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(doc)); err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		return u
	}
	const head = `"apiVersion":"addon.open-cluster-management.io/v1alpha1","kind":"AddOnDeploymentConfig"`
	tests := []struct {
		name string
		doc  string
		want string // the exact JSON whose SHA-256 is expected
	}{
		{"no spec hashes as {}", `{` + head + `,"metadata":{"name":"a"}}`, `{}`},
		{"empty spec", `{` + head + `,"spec":{}}`, `{}`},
		{"keys sorted", `{` + head + `,"spec":{"b":2,"a":"x"}}`, `{"a":"x","b":2}`},
		{"nested keys sorted", `{"spec":{"z":[{"y":true,"x":null}],"m":{"q":1.5,"p":"v"}},` + head + `}`, `{"m":{"p":"v","q":1.5},"z":[{"x":null,"y":true}]}`},
		{"metadata and status do not count", `{` + head + `,"metadata":{"name":"b","generation":7},"spec":{"a":"x","b":2},"status":{"s":1}}`, `{"a":"x","b":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := specHash(decode(t, tt.doc))
			if err != nil {
				t.Fatalf("specHash: %v", err)
			}
			if want := sum(tt.want); got != want {
				t.Errorf("specHash = %s, want sha256(%s) = %s", got, tt.want, want)
			}
		})
	}
	t.Run("equal specs in any key order", func(t *testing.T) {
		a, _ := specHash(decode(t, `{`+head+`,"spec":{"a":1,"b":{"c":"d","e":"f"}}}`))
		b, _ := specHash(decode(t, `{"spec":{"b":{"e":"f","c":"d"},"a":1},`+head+`}`))
		if a != b {
			t.Errorf("hashes differ: %s, %s", a, b)
		}
		c, _ := specHash(decode(t, `{`+head+`,"spec":{"a":1,"b":{"c":"d","e":"g"}}}`))
		if a == c {
			t.Errorf("different specs hash the same: %s", a)
		}
	})
	t.Run("an unencodable spec is an error", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"c": make(chan int)}}}
		if _, err := specHash(u); err == nil {
			t.Error("specHash of a channel succeeded")
		}
	})
}

func TestSameDesired(t *testing.T) {
	want := []resolvedConfig{resolved(adcGR, "ns", "adc", "h1", 0), resolved(tmplGR, "", "tmpl", "h2", 0)}
	matching := func() []addonv1alpha1.ConfigReference {
		return []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "adc", "h1"), nil, 0),
			desiredRef(tmplGR, hashOf("", "tmpl", "h2"), nil, 0),
		}
	}
	tests := []struct {
		name   string
		refs   func() []addonv1alpha1.ConfigReference
		want   []resolvedConfig
		expect bool
	}{
		{"both empty", func() []addonv1alpha1.ConfigReference { return nil }, nil, true},
		{"equal", matching, want, true},
		{"lastApplied does not matter", func() []addonv1alpha1.ConfigReference {
			r := matching()
			r[0].LastAppliedConfig = hashOf("ns", "adc", "old")
			r[1].LastObservedGeneration = 9
			return r
		}, want, true},
		{"nothing desired yet", func() []addonv1alpha1.ConfigReference { return nil }, want, false},
		{"one more desired", func() []addonv1alpha1.ConfigReference { return matching()[:1] }, want, false},
		{"one less desired", matching, want[:1], false},
		{"no desiredConfig", func() []addonv1alpha1.ConfigReference { r := matching(); r[1].DesiredConfig = nil; return r }, want, false},
		{"another spec hash", func() []addonv1alpha1.ConfigReference {
			r := matching()
			r[1].DesiredConfig = hashOf("", "tmpl", "h3")
			return r
		}, want, false},
		{"another name", func() []addonv1alpha1.ConfigReference {
			r := matching()
			r[0].DesiredConfig = hashOf("ns", "adc2", "h1")
			return r
		}, want, false},
		{"another namespace", func() []addonv1alpha1.ConfigReference {
			r := matching()
			r[0].DesiredConfig = hashOf("ns2", "adc", "h1")
			return r
		}, want, false},
		{"another group/resource", func() []addonv1alpha1.ConfigReference {
			r := matching()
			r[0].ConfigGroupResource = secretsGR
			return r
		}, want, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameDesired(tt.refs(), tt.want); got != tt.expect {
				t.Errorf("sameDesired() = %v, want %v", got, tt.expect)
			}
		})
	}
}

func TestApplied(t *testing.T) {
	tests := []struct {
		name string
		refs []addonv1alpha1.ConfigReference
		want bool
	}{
		{"none", nil, true},
		{"all applied", []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 0),
			desiredRef(tmplGR, hashOf("", "t", "h2"), hashOf("", "t", "h2"), 0),
		}, true},
		{"one never applied", []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 0),
			desiredRef(tmplGR, hashOf("", "t", "h2"), nil, 0),
		}, false},
		{"an older spec applied", []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h0"), 0),
		}, false},
		{"another object applied with the same hash", []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "b", "h1"), hashOf("ns", "a", "h1"), 0),
		}, false},
		{"nothing desired", []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, nil, hashOf("ns", "a", "h1"), 0),
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := applied(tt.refs); got != tt.want {
				t.Errorf("applied() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDesiredReferences(t *testing.T) {
	tests := []struct {
		name string
		old  []addonv1alpha1.ConfigReference
		want []resolvedConfig
		out  []addonv1alpha1.ConfigReference
	}{{
		name: "new entries have no lastApplied",
		want: []resolvedConfig{resolved(adcGR, "ns", "a", "h1", 3), resolved(tmplGR, "", "t", "h2", 1)},
		out: []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "a", "h1"), nil, 0),
			desiredRef(tmplGR, hashOf("", "t", "h2"), nil, 0),
		},
	}, {
		name: "an existing entry keeps lastApplied and lastObservedGeneration during an upgrade",
		old:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h0"), hashOf("ns", "a", "h0"), 2)},
		want: []resolvedConfig{resolved(adcGR, "ns", "a", "h1", 3)},
		out:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h0"), 2)},
	}, {
		name: "an applied entry observes the configuration's generation",
		old:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 2)},
		want: []resolvedConfig{resolved(adcGR, "ns", "a", "h1", 5)},
		out:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 5)},
	}, {
		name: "an object without a generation keeps the observed one",
		old:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 2)},
		want: []resolvedConfig{resolved(adcGR, "ns", "a", "h1", 0)},
		out:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 2)},
	}, {
		name: "a rename within the group/resource upgrades from what was applied",
		old:  []addonv1alpha1.ConfigReference{desiredRef(tmplGR, hashOf("", "addon-0.4.0", "h0"), hashOf("", "addon-0.4.0", "h0"), 4)},
		want: []resolvedConfig{resolved(tmplGR, "", "addon-0.4.1", "h1", 1)},
		out:  []addonv1alpha1.ConfigReference{desiredRef(tmplGR, hashOf("", "addon-0.4.1", "h1"), hashOf("", "addon-0.4.0", "h0"), 4)},
	}, {
		name: "nothing carries over from another group/resource",
		old:  []addonv1alpha1.ConfigReference{desiredRef(tmplGR, hashOf("", "t", "h0"), hashOf("", "t", "h0"), 4)},
		want: []resolvedConfig{resolved(adcGR, "", "t", "h0", 1)},
		out:  []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("", "t", "h0"), nil, 0)},
	}, {
		name: "several per group/resource: same referent first, else the group/resource's first",
		old: []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "x", "hx"), hashOf("ns", "x", "hx0"), 1),
			desiredRef(adcGR, hashOf("ns", "y", "hy"), hashOf("ns", "y", "hy0"), 2),
		},
		want: []resolvedConfig{resolved(adcGR, "ns", "y", "hy", 0), resolved(adcGR, "ns", "z", "hz", 0)},
		out: []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "y", "hy"), hashOf("ns", "y", "hy0"), 2),
			desiredRef(adcGR, hashOf("ns", "z", "hz"), hashOf("ns", "x", "hx0"), 1),
		},
	}, {
		name: "entries no longer wanted go, the output follows want",
		old: []addonv1alpha1.ConfigReference{
			desiredRef(tmplGR, hashOf("", "t", "ht"), hashOf("", "t", "ht"), 0),
			desiredRef(secretsGR, hashOf("ns", "s", "hs"), hashOf("ns", "s", "hs"), 0),
			desiredRef(adcGR, hashOf("ns", "a", "ha"), hashOf("ns", "a", "ha"), 0),
		},
		want: []resolvedConfig{resolved(adcGR, "ns", "a", "ha", 0), resolved(tmplGR, "", "t", "ht", 0)},
		out: []addonv1alpha1.ConfigReference{
			desiredRef(adcGR, hashOf("ns", "a", "ha"), hashOf("ns", "a", "ha"), 0),
			desiredRef(tmplGR, hashOf("", "t", "ht"), hashOf("", "t", "ht"), 0),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var oldCopy []addonv1alpha1.ConfigReference
			for i := range tt.old {
				oldCopy = append(oldCopy, *tt.old[i].DeepCopy())
			}
			got := desiredReferences(tt.old, tt.want)
			if !reflect.DeepEqual(got, tt.out) {
				t.Errorf("desiredReferences:\n got %s\nwant %s", refsString(got), refsString(tt.out))
			}
			if !reflect.DeepEqual(tt.old, oldCopy) {
				t.Errorf("desiredReferences changed its input: %s", refsString(tt.old))
			}
			// The desired configs are copies: changing want afterwards changes nothing.
			for i := range tt.want {
				tt.want[i].SpecHash = "mutated"
			}
			for _, r := range got {
				if r.DesiredConfig.SpecHash == "mutated" {
					t.Errorf("desiredConfig %+v shares memory with want", *r.DesiredConfig)
				}
			}
		})
	}
}

func refsString(refs []addonv1alpha1.ConfigReference) string {
	hs := func(h *addonv1alpha1.ConfigSpecHash) string {
		if h == nil {
			return "nil"
		}
		return refString(h.ConfigReferent) + "@" + h.SpecHash
	}
	var out []string
	for _, r := range refs {
		out = append(out, fmt.Sprintf("{%s %s desired=%s lastApplied=%s gen=%d}", r.Resource, refString(r.ConfigReferent), hs(r.DesiredConfig), hs(r.LastAppliedConfig), r.LastObservedGeneration))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func cond(typ string, status metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

func TestClusterState(t *testing.T) {
	early := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	late := early.Add(time.Hour)
	want := []resolvedConfig{resolved(adcGR, "ns", "a", "h1", 0), resolved(tmplGR, "", "t", "h2", 0)}
	appliedRefs := []addonv1alpha1.ConfigReference{
		desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 0),
		desiredRef(tmplGR, hashOf("", "t", "h2"), hashOf("", "t", "h2"), 0),
	}
	pendingRefs := []addonv1alpha1.ConfigReference{
		desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 0),
		desiredRef(tmplGR, hashOf("", "t", "h2"), hashOf("", "t", "h0"), 0),
	}
	staleRefs := []addonv1alpha1.ConfigReference{
		desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 0),
		desiredRef(tmplGR, hashOf("", "t", "h0"), hashOf("", "t", "h0"), 0),
	}
	configured := func(status metav1.ConditionStatus, at time.Time) metav1.Condition {
		return cond(addonv1alpha1.ManagedClusterAddOnConditionConfigured, status, ReasonConfigured, at)
	}
	progressing := func(reason string, at time.Time) metav1.Condition {
		status := metav1.ConditionTrue
		if strings.HasSuffix(reason, "Succeed") || strings.HasSuffix(reason, "Failed") {
			status = metav1.ConditionFalse
		}
		return cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, status, reason, at)
	}
	mca := func(refs []addonv1alpha1.ConfigReference, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		m.Status.ConfigReferences = refs
		m.Status.Conditions = conds
		return m
	}
	installing := addonv1alpha1.ProgressingReasonInstalling
	tests := []struct {
		name string
		mca  *addonv1alpha1.ManagedClusterAddOn
		want []resolvedConfig
		st   rollout.ClusterState
	}{
		// ToApply: another desire, or not Configured.
		{"no add-on", nil, want, rollout.ClusterState{Status: rollout.ToApply}},
		{"another desired config", mca(staleRefs, configured(metav1.ConditionTrue, early)), want, rollout.ClusterState{Status: rollout.ToApply}},
		{"nothing desired yet", mca(nil, configured(metav1.ConditionTrue, early)), want, rollout.ClusterState{Status: rollout.ToApply}},
		{"a failed add-on with another desired config", mca(staleRefs, configured(metav1.ConditionTrue, early), progressing(addonv1alpha1.ProgressingReasonUpgradeFailed, late)), want,
			rollout.ClusterState{Status: rollout.ToApply}},
		{"no Configured", mca(appliedRefs), want, rollout.ClusterState{Status: rollout.ToApply}},
		{"Configured False", mca(appliedRefs, configured(metav1.ConditionFalse, early)), want, rollout.ClusterState{Status: rollout.ToApply}},
		{"Configured Unknown", mca(appliedRefs, configured(metav1.ConditionUnknown, early)), want, rollout.ClusterState{Status: rollout.ToApply}},

		// Succeeded: everything desired applied; the soak starts with the reported success,
		// else with Configured.
		{"applied, no Progressing: since Configured", mca(appliedRefs, configured(metav1.ConditionTrue, early)), want,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: early}},
		{"nothing to configure", mca(nil, configured(metav1.ConditionTrue, early)), nil,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: early}},
		{"applied, UpgradeSucceed: since Progressing", mca(appliedRefs, configured(metav1.ConditionTrue, early), progressing(addonv1alpha1.ProgressingReasonUpgradeSucceed, late)), want,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: late}},
		{"applied, InstallSucceed: since Progressing even if earlier", mca(appliedRefs, configured(metav1.ConditionTrue, late), progressing(addonv1alpha1.ProgressingReasonInstallSucceed, early)), want,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: early}},
		{"applied, Installing not reported done yet: since Configured", mca(appliedRefs, configured(metav1.ConditionTrue, early), progressing(installing, late)), want,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: early}},
		{"applied beats a later failure", mca(appliedRefs, configured(metav1.ConditionTrue, early), progressing(addonv1alpha1.ProgressingReasonInstallFailed, late)), want,
			rollout.ClusterState{Status: rollout.Succeeded, LastTransitionTime: early}},

		// Failed: not applied, and the deploy reports a failure.
		{"InstallFailed: since Progressing", mca(pendingRefs, configured(metav1.ConditionTrue, late), progressing(addonv1alpha1.ProgressingReasonInstallFailed, early)), want,
			rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: early}},
		{"UpgradeFailed", mca(pendingRefs, configured(metav1.ConditionTrue, early), progressing(addonv1alpha1.ProgressingReasonUpgradeFailed, late)), want,
			rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: late}},
		{"Failed", mca(pendingRefs, configured(metav1.ConditionTrue, late), progressing(addonv1alpha1.ProgressingReasonFailed, early)), want,
			rollout.ClusterState{Status: rollout.Failed, LastTransitionTime: early}},

		// Progressing otherwise: the deadline runs from the admission (Configured), whatever
		// the deploy reported, or if it reported nothing.
		{"pending, no Progressing: since admitted", mca(pendingRefs, configured(metav1.ConditionTrue, early)), want,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: early}},
		{"pending, Upgrading reported later: still since admitted", mca(pendingRefs, configured(metav1.ConditionTrue, early), progressing(addonv1alpha1.ProgressingReasonUpgrading, late)), want,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: early}},
		{"pending, Installing left from before the admission: since admitted", mca(pendingRefs, configured(metav1.ConditionTrue, late), progressing(installing, early)), want,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: late}},
		{"pending, the previous success is stale: since admitted", mca(pendingRefs, configured(metav1.ConditionTrue, late), progressing(addonv1alpha1.ProgressingReasonUpgradeSucceed, early)), want,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: late}},
		{"ConfigurationUnsupported is not a failure", mca(pendingRefs, configured(metav1.ConditionTrue, early), progressing(addonv1alpha1.ProgressingReasonConfigurationUnsupported, late)), want,
			rollout.ClusterState{Status: rollout.Progressing, LastTransitionTime: early}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clusterState(tt.mca, tt.want)
			if got.Status != tt.st.Status || !got.LastTransitionTime.Equal(tt.st.LastTransitionTime) {
				t.Errorf("clusterState() = %v at %v, want %v at %v", got.Status, got.LastTransitionTime, tt.st.Status, tt.st.LastTransitionTime)
			}
		})
	}
}

// TestAdmissionStartsTheDeadline: a cluster admitted to a rollout whose add-on never reports
// Installing or Upgrading (a deploy that never gets there, an add-on whose own manager says
// nothing) times out by progressDeadline, counted from the admission that configure records,
// instead of holding its rollout slot forever.
func TestAdmissionStartsTheDeadline(t *testing.T) {
	configuredAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	admittedAt := configuredAt.Add(time.Hour)
	old := []resolvedConfig{resolved(adcGR, "ns", "a", "h1", 0)}
	want := []resolvedConfig{resolved(adcGR, "ns", "a", "h2", 0)}
	// Installed with h1 long ago: Configured True since then, the install reported done.
	m := &addonv1alpha1.ManagedClusterAddOn{}
	m.Namespace, m.Name = "cluster1", "hello"
	m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), hashOf("ns", "a", "h1"), 0)}
	m.Status.Conditions = []metav1.Condition{
		cond(addonv1alpha1.ManagedClusterAddOnConditionConfigured, metav1.ConditionTrue, ReasonConfigured, configuredAt),
		cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, addonv1alpha1.ProgressingReasonInstallSucceed, configuredAt),
	}
	if st := clusterState(m, old); st.Status != rollout.Succeeded {
		t.Fatalf("before the change: %v, want Succeeded", st.Status)
	}
	if st := clusterState(m, want); st.Status != rollout.ToApply {
		t.Fatalf("h2 desired, not admitted: %v, want ToApply", st.Status)
	}

	// Not admitted yet: Configured False, the configurations stay.
	refs, conds := configure(m, &target{want: want}, false, admittedAt)
	if c := meta.FindStatusCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionConfigured); c.Status != metav1.ConditionFalse || !reflect.DeepEqual(refs, m.Status.ConfigReferences) {
		t.Fatalf("waiting its turn: Configured %s, configReferences %+v; want False and unchanged", c.Status, refs)
	}

	// Admitted in the reconcile that first sees the change: Configured was True and stays
	// True, but its lastTransitionTime becomes the admission.
	refs, conds = configure(m, &target{want: want}, true, admittedAt)
	c := meta.FindStatusCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionConfigured)
	if c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(admittedAt) {
		t.Fatalf("admitted: Configured %s since %v, want True since the admission %v", c.Status, c.LastTransitionTime, admittedAt)
	}
	admitted := m.DeepCopy()
	admitted.Status.ConfigReferences, admitted.Status.Conditions = refs, conds
	st := clusterState(admitted, want)
	if st.Status != rollout.Progressing || !st.LastTransitionTime.Equal(admittedAt) {
		t.Fatalf("admitted, nothing reported: %v since %v, want Progressing since the admission %v", st.Status, st.LastTransitionTime, admittedAt)
	}

	// Nothing is ever reported: past progressDeadline, the cluster times out.
	res, err := rollout.Evaluate(rollout.Input{
		Strategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All, All: &clusterv1alpha1.RolloutAll{RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: "5m"}}},
		Groups:   []rollout.Group{{Clusters: []string{"cluster1"}}},
		States:   map[string]rollout.ClusterState{"cluster1": st},
		Now:      admittedAt.Add(6 * time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.TimedOut, []string{"cluster1"}) {
		t.Fatalf("6m after the admission with progressDeadline 5m: timed out %v (%s), want cluster1", res.TimedOut, res.Message)
	}

	// A reconcile after the admission keeps the time.
	_, again := configure(admitted, &target{want: want}, false, admittedAt.Add(time.Minute))
	if c := meta.FindStatusCondition(again, addonv1alpha1.ManagedClusterAddOnConditionConfigured); !c.LastTransitionTime.Time.Equal(admittedAt) {
		t.Fatalf("a later reconcile moved Configured's lastTransitionTime to %v, want the admission %v", c.LastTransitionTime, admittedAt)
	}
}

// work is a ManifestWork of generation gen rendered with hashes, with conditions.
func work(name, hashes string, gen int64, conds ...metav1.Condition) workv1.ManifestWork {
	w := workv1.ManifestWork{}
	w.Name = name
	w.Generation = gen
	if hashes != "" {
		w.Annotations = map[string]string{ConfigSpecHashAnnotation: hashes}
	}
	w.Status.Conditions = conds
	return w
}

func workCond(typ string, status metav1.ConditionStatus, gen int64, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, Reason: "Test", Message: msg}
}

func TestWorksState(t *testing.T) {
	const cur, old = `{"a":"h1"}`, `{"a":"h0"}`
	applied := func(gen int64) metav1.Condition { return workCond(workv1.WorkApplied, metav1.ConditionTrue, gen, "") }
	available := func(gen int64) metav1.Condition { return workCond(workv1.WorkAvailable, metav1.ConditionTrue, gen, "") }
	ready := func(name string) workv1.ManifestWork { return work(name, cur, 2, applied(2), available(2)) }
	type result struct {
		done, applied bool
		notApplied    string
	}
	tests := []struct {
		name     string
		hashes   string
		rendered int
		works    []workv1.ManifestWork
		want     result
	}{
		{"not rendered", "", 1, []workv1.ManifestWork{ready("w0")}, result{}},
		{"rendered nothing: nothing to wait for (writeStatus wants one work rendered)", cur, 0, nil, result{done: true, applied: true}},
		{"a work not in the cache yet", cur, 2, []workv1.ManifestWork{ready("w0")}, result{}},
		{"a work more than rendered", cur, 1, []workv1.ManifestWork{ready("w0"), ready("w1")}, result{}},
		{"all applied and available", cur, 2, []workv1.ManifestWork{ready("w0"), ready("w1")}, result{done: true, applied: true}},
		{"a work of the previous configurations", cur, 2, []workv1.ManifestWork{ready("w0"), work("w1", old, 2, applied(2), available(2))}, result{}},
		{"a work without the annotation", cur, 1, []workv1.ManifestWork{work("w0", "", 2, applied(2), available(2))}, result{}},
		{"applied for an older generation", cur, 2, []workv1.ManifestWork{ready("w0"), work("w1", cur, 3, applied(2), available(3))}, result{}},
		{"not applied yet", cur, 1, []workv1.ManifestWork{work("w0", cur, 1)}, result{}},
		{"Applied Unknown", cur, 1, []workv1.ManifestWork{work("w0", cur, 1, workCond(workv1.WorkApplied, metav1.ConditionUnknown, 1, "hmm"))}, result{}},
		{"Applied False: the first message", cur, 3, []workv1.ManifestWork{
			ready("w0"),
			work("w1", cur, 2, workCond(workv1.WorkApplied, metav1.ConditionFalse, 2, "boom"), available(2)),
			work("w2", cur, 2, workCond(workv1.WorkApplied, metav1.ConditionFalse, 2, "bang")),
		}, result{notApplied: "ManifestWork w1: boom"}},
		{"Available missing", cur, 2, []workv1.ManifestWork{ready("w0"), work("w1", cur, 2, applied(2))}, result{applied: true}},
		{"Available False", cur, 1, []workv1.ManifestWork{work("w0", cur, 2, applied(2), workCond(workv1.WorkAvailable, metav1.ConditionFalse, 2, ""))}, result{applied: true}},
		{"Available for an older generation", cur, 1, []workv1.ManifestWork{work("w0", cur, 2, applied(2), available(1))}, result{applied: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &deployStatus{hashes: tt.hashes, rendered: tt.rendered, works: tt.works}
			var got result
			got.done, got.applied, got.notApplied = s.worksState(s.works, s.rendered)
			if got != tt.want {
				t.Errorf("worksState() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestJSONMap(t *testing.T) {
	t.Run("unset pointers are left out", func(t *testing.T) {
		ref := addonv1alpha1.ConfigReference{ConfigGroupResource: adcGR, ConfigReferent: referent("ns", "a"), DesiredConfig: hashOf("ns", "a", "h1")}
		got, err := jsonMap([]addonv1alpha1.ConfigReference{ref})
		if err != nil {
			t.Fatal(err)
		}
		want := []any{map[string]any{
			"group": adcGR.Group, "resource": adcGR.Resource, "namespace": "ns", "name": "a",
			"lastObservedGeneration": float64(0), // a zero is not a null: it stays
			"desiredConfig":          map[string]any{"namespace": "ns", "name": "a", "specHash": "h1"},
		}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("jsonMap() = %#v\nwant %#v", got, want)
		}
	})
	t.Run("nulls pruned at every depth, list elements kept", func(t *testing.T) {
		in := map[string]any{
			"a": nil,
			"b": map[string]any{"c": nil, "d": "x", "e": map[string]any{"f": nil}},
			"g": []any{map[string]any{"h": nil, "i": true}, nil, []any{map[string]any{"j": nil}}},
			"k": "",
		}
		got, err := jsonMap(in)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"b": map[string]any{"d": "x", "e": map[string]any{}},
			"g": []any{map[string]any{"i": true}, nil, []any{map[string]any{}}},
			"k": "",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("jsonMap() = %#v\nwant %#v", got, want)
		}
	})
	t.Run("scalars and null", func(t *testing.T) {
		for _, tt := range []struct {
			in   any
			want any
		}{{nil, nil}, {"s", "s"}, {3, float64(3)}, {false, false}} {
			got, err := jsonMap(tt.in)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("jsonMap(%#v) = %#v, %v; want %#v", tt.in, got, err, tt.want)
			}
		}
	})
	t.Run("an unencodable value is an error", func(t *testing.T) {
		if _, err := jsonMap(map[string]any{"c": make(chan int)}); err == nil {
			t.Error("jsonMap of a channel succeeded")
		}
	})
}

func TestMCAInstallChanged(t *testing.T) {
	base := func() *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		m.Name, m.Namespace, m.Generation = "hello", "cluster1", 1
		m.Labels = map[string]string{InstallStrategyLabel: placementsValue}
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1alpha1", Kind: "ClusterManagementAddOn", Name: "hello", UID: "u1"}}
		return m
	}
	deleted := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tests := []struct {
		name   string
		change func(m *addonv1alpha1.ManagedClusterAddOn)
		want   bool
	}{
		{"nothing", func(*addonv1alpha1.ManagedClusterAddOn) {}, false},
		{"status", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Conditions = []metav1.Condition{cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue, "x", time.Time{})}
			m.Status.Namespace = "agents"
		}, false},
		{"spec", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Generation = 2
			m.Spec.Configs = []addonv1alpha1.AddOnConfig{addOnConfig(adcGR, "", "a")}
		}, false},
		{"annotations", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Annotations = map[string]string{"a": "b"} }, false},
		{"a label added", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Labels["env"] = "prod" }, true},
		{"the strategy label removed", func(m *addonv1alpha1.ManagedClusterAddOn) { delete(m.Labels, InstallStrategyLabel) }, true},
		{"owner removed", func(m *addonv1alpha1.ManagedClusterAddOn) { m.OwnerReferences = nil }, true},
		{"owner replaced", func(m *addonv1alpha1.ManagedClusterAddOn) { m.OwnerReferences[0].UID = "u2" }, true},
		{"deletion", func(m *addonv1alpha1.ManagedClusterAddOn) { m.DeletionTimestamp = &deleted }, true},
	}
	p := mcaInstallChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n := base(), base()
			tt.change(n)
			if got := p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tt.want {
				t.Errorf("Update(old, new) = %v, want %v", got, tt.want)
			}
			if got := p.Update(event.UpdateEvent{ObjectOld: n, ObjectNew: o}); got != tt.want {
				t.Errorf("Update(new, old) = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("the same deletion", func(t *testing.T) {
		o, n := base(), base()
		o.DeletionTimestamp, n.DeletionTimestamp = ptrTo(deleted), ptrTo(deleted)
		n.Finalizers = []string{"x"}
		if p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}) {
			t.Error("Update passed an unchanged deletion timestamp")
		}
	})
	if !p.Create(event.CreateEvent{Object: base()}) || !p.Delete(event.DeleteEvent{Object: base()}) {
		t.Error("creations and deletions must pass")
	}
}

func TestMCARolloutChanged(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		m.Name, m.Namespace, m.Generation = "hello", "cluster1", 1
		m.Status.ConfigReferences = []addonv1alpha1.ConfigReference{desiredRef(adcGR, hashOf("ns", "a", "h1"), nil, 0)}
		m.Status.Conditions = []metav1.Condition{
			cond(addonv1alpha1.ManagedClusterAddOnConditionConfigured, metav1.ConditionTrue, ReasonConfigured, at),
			cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionTrue, addonv1alpha1.ProgressingReasonInstalling, at),
			cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionUnknown, "NoProbe", at),
		}
		return m
	}
	setCond := func(m *addonv1alpha1.ManagedClusterAddOn, c metav1.Condition) {
		meta.SetStatusCondition(&m.Status.Conditions, c)
	}
	tests := []struct {
		name   string
		change func(m *addonv1alpha1.ManagedClusterAddOn)
		want   bool
	}{
		{"nothing", func(*addonv1alpha1.ManagedClusterAddOn) {}, false},
		{"labels and annotations", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Labels = map[string]string{"a": "b"}
			m.Annotations = map[string]string{"c": "d"}
		}, false},
		{"Available", func(m *addonv1alpha1.ManagedClusterAddOn) {
			setCond(m, cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue, "Ready", at.Add(time.Minute)))
		}, false},
		{"ManifestApplied", func(m *addonv1alpha1.ManagedClusterAddOn) {
			setCond(m, cond(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue, "Applied", at))
		}, false},
		{"health check mode and namespace", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeLease
			m.Status.Namespace = "agents"
		}, false},
		{"generation", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Generation = 2 }, true},
		{"lastAppliedConfig", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences[0].LastAppliedConfig = hashOf("ns", "a", "h1")
		}, true},
		{"desiredConfig", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences[0].DesiredConfig = hashOf("ns", "a", "h2")
		}, true},
		{"Configured", func(m *addonv1alpha1.ManagedClusterAddOn) {
			setCond(m, cond(addonv1alpha1.ManagedClusterAddOnConditionConfigured, metav1.ConditionFalse, ReasonNotConfigured, at))
		}, true},
		{"Progressing reason", func(m *addonv1alpha1.ManagedClusterAddOn) {
			setCond(m, cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionTrue, addonv1alpha1.ProgressingReasonUpgrading, at))
		}, true},
		{"Progressing removed", func(m *addonv1alpha1.ManagedClusterAddOn) {
			meta.RemoveStatusCondition(&m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
		}, true},
	}
	p := mcaRolloutChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n := base(), base()
			tt.change(n)
			if got := p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != tt.want {
				t.Errorf("Update(old, new) = %v, want %v", got, tt.want)
			}
			if got := p.Update(event.UpdateEvent{ObjectOld: n, ObjectNew: o}); got != tt.want {
				t.Errorf("Update(new, old) = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("other kinds pass", func(t *testing.T) {
		o, n := cmaWith(nil), cmaWith(nil)
		if !p.Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}) {
			t.Error("Update of a ClusterManagementAddOn did not pass")
		}
	})
	if !p.Create(event.CreateEvent{Object: base()}) || !p.Delete(event.DeleteEvent{Object: base()}) {
		t.Error("creations and deletions must pass")
	}
}

// objects is a client.Reader over unstructured objects keyed kind/namespace/name.
type objects map[string]*unstructured.Unstructured

func (o objects) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	u := obj.(*unstructured.Unstructured)
	src, ok := o[u.GetKind()+"/"+key.Namespace+"/"+key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: u.GetKind()}, key.Name)
	}
	u.Object = src.DeepCopy().Object
	return nil
}

func (o objects) List(context.Context, client.ObjectList, ...client.ListOption) error {
	panic("List is not used")
}

// TestResolveNamespaces checks the namespace a configuration without one is read from: its
// entry's default namespace for a namespaced resource, none for a cluster-scoped one.
func TestResolveNamespaces(t *testing.T) {
	gv := addonv1alpha1.GroupVersion
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	mapper.Add(gv.WithKind("AddOnDeploymentConfig"), meta.RESTScopeNamespace)
	mapper.Add(gv.WithKind("AddOnTemplate"), meta.RESTScopeRoot)
	obj := func(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(gv.WithKind(kind))
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	store := objects{}
	for _, u := range []*unstructured.Unstructured{
		obj("AddOnDeploymentConfig", "cluster1", "adc", map[string]any{"agentInstallNamespace": "c1"}),
		obj("AddOnDeploymentConfig", "pl-ns", "adc", map[string]any{"agentInstallNamespace": "pl"}),
		obj("AddOnDeploymentConfig", "explicit", "adc", map[string]any{"agentInstallNamespace": "ex"}),
		obj("AddOnTemplate", "", "tmpl", map[string]any{"addonName": "hello"}),
	} {
		store[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
	}
	hash := func(key string) string {
		h, err := specHash(store[key])
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	type got struct {
		gr  addonv1alpha1.ConfigGroupResource
		ref addonv1alpha1.ConfigReferent
	}
	tests := []struct {
		name    string
		l       configList
		want    []got
		wantErr string
	}{{
		name: "a namespaced configuration without a namespace is read from its entry's default",
		l:    configList{adcGR: {entry("", "adc", "cluster1"), entry("", "adc", "pl-ns")}},
		want: []got{{adcGR, referent("cluster1", "adc")}, {adcGR, referent("pl-ns", "adc")}},
	}, {
		name: "an explicit namespace wins",
		l:    configList{adcGR: {entry("explicit", "adc", "cluster1")}},
		want: []got{{adcGR, referent("explicit", "adc")}},
	}, {
		name: "a cluster-scoped configuration drops a namespace, in keys() order",
		l:    configList{tmplGR: {entry("pl-ns", "tmpl", "cluster1")}, adcGR: {entry("explicit", "adc", "")}},
		want: []got{{adcGR, referent("explicit", "adc")}, {tmplGR, referent("", "tmpl")}},
	}, {
		name:    "a default without a namespace",
		l:       configList{adcGR: {entry("", "adc", "")}},
		wantErr: "needs a namespace",
	}, {
		name:    "a missing configuration",
		l:       configList{adcGR: {entry("", "adc", "elsewhere")}},
		wantErr: "elsewhere/adc not found",
	}, {
		name:    "an unknown resource",
		l:       configList{secretsGR: {entry("", "s", "cluster1")}},
		wantErr: "configuration resource secrets.",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := newConfigReader(store, nil, mapper).resolve(context.Background(), tt.l)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("resolve() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if len(res) != len(tt.want) {
				t.Fatalf("resolve() returned %d configurations, want %d", len(res), len(tt.want))
			}
			// The same from the cache: the add-on API's kinds are read there, nothing from the
			// API server.
			cached, err := newConfigReader(objects{}, store, mapper).resolve(context.Background(), tt.l)
			if err != nil {
				t.Fatalf("resolve from the cache: %v", err)
			}
			if !reflect.DeepEqual(cached, res) {
				t.Errorf("resolve from the cache = %+v, want %+v", cached, res)
			}
			for i, w := range tt.want {
				r := res[i]
				kind := map[addonv1alpha1.ConfigGroupResource]string{adcGR: "AddOnDeploymentConfig", tmplGR: "AddOnTemplate"}[w.gr]
				wantHash := hash(kind + "/" + w.ref.Namespace + "/" + w.ref.Name)
				if r.ConfigGroupResource != w.gr || r.ConfigReferent != w.ref || r.SpecHash != wantHash {
					t.Errorf("configuration %d = %+v %+v %s, want %+v %+v %s", i, r.ConfigGroupResource, r.ConfigReferent, r.SpecHash, w.gr, w.ref, wantHash)
				}
				if r.Object == nil || r.Object.GetNamespace() != w.ref.Namespace || r.Object.GetName() != w.ref.Name {
					t.Errorf("configuration %d: object %v, want %s", i, r.Object, refString(w.ref))
				}
			}
		})
	}
}

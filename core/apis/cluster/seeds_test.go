package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/apis/internal/seedcheck"
)

const (
	seedGlob = "../../../e2e/testdata/seeds/cluster-*.yaml"
	crdGlob  = "../../crds/bases/" + GroupName + "_*.yaml"
)

// seedKinds are the kinds of this group that the seed documents must cover.
var seedKinds = []string{
	"ManagedCluster", "ManagedClusterSet", "ManagedClusterSetBinding",
	"Placement", "PlacementDecision", "ClusterClaim", "AddOnPlacementScore",
}

// TestSeedExamples decodes every cluster-group seed strictly into the Go types
// and validates it against the generated CRD the way the API server would on
// create plus a status update: defaulting, pruning, OpenAPI schema, list-map
// keys and CEL rules.
func TestSeedExamples(t *testing.T) {
	files, err := filepath.Glob(seedGlob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no seed documents match %s", seedGlob)
	}
	v := newValidator(t)
	seen := map[string]int{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := v.Check(data)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(f), err)
			}
			seen[obj.GetObjectKind().GroupVersionKind().Kind]++
			wantKind := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind)
			if !strings.HasSuffix(filepath.Base(f), "-"+wantKind+".yaml") {
				t.Errorf("%s holds a %s; the file name must end in -%s.yaml", filepath.Base(f), wantKind, wantKind)
			}
		})
	}
	for _, k := range seedKinds {
		if seen[k] == 0 {
			t.Errorf("no seed document of kind %s", k)
		}
	}
}

// TestSeedValidatorRejects makes sure the checks above have teeth: each broken
// variant of a valid document must be rejected for the stated reason.
func TestSeedValidatorRejects(t *testing.T) {
	v := newValidator(t)
	seedcheck.ExpectRejected(t, v, []seedcheck.Rejection{
		{
			Name: "misnamed field",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}
spec: {hubAcceptClient: true}`,
			Want: `unknown field "hubAcceptClient"`,
		},
		{
			Name: "unknown kind",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedClusterThing
metadata: {name: c1}`,
			Want: "no kind",
		},
		{
			Name: "taint effect outside the enum",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}
spec:
  taints: [{key: gpu, effect: NoSchedule}]`,
			Want: "spec.taints[0].effect",
		},
		{
			Name: "missing spec",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}`,
			Want: "spec: Required value",
		},
		{
			Name: "prioritizer weight above 10",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
spec:
  prioritizerPolicy:
    configurations: [{scoreCoordinate: {builtIn: Steady}, weight: 11}]`,
			Want: "spec.prioritizerPolicy.configurations[0].weight",
		},
		{
			Name: "clustersPerDecisionGroup above 100%",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
spec:
  decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: "150%"}}`,
			Want: "clustersPerDecisionGroup",
		},
		{
			Name: "namespaced kind without namespace",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p}
spec: {}`,
			Want: "metadata.namespace",
		},
		{
			Name: "cluster-scoped kind with namespace",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: ClusterClaim
metadata: {name: id.k8s.io, namespace: default}
spec: {value: x}`,
			Want: "metadata.namespace",
		},
		{
			Name: "binding named differently from its set",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: a, namespace: default}
spec: {clusterSet: b}`,
			Want: "must have the same name as the target ManagedClusterSet",
		},
		{
			Name: "duplicate score names",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {name: s, namespace: cluster1}
status:
  scores: [{name: cpu, value: 1}, {name: cpu, value: 2}]`,
			Want: "status.scores[1]",
		},
		{
			Name: "decision without reason",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata: {name: d, namespace: default}
status:
  decisions: [{clusterName: c1}]`,
			Want: "status.decisions[0].reason",
		},
		{
			Name: "score outside [-100, 100]",
			Doc: `apiVersion: cluster.open-cluster-management.io/v1alpha1
kind: AddOnPlacementScore
metadata: {name: s, namespace: cluster1}
status:
  scores: [{name: cpu, value: 101}]`,
			Want: "status.scores[0].value",
		},
	})
}

// TestDefaultsFromCRD checks that the API server would fill in OCM's defaults
// on the minimal seeds.
func TestDefaultsFromCRD(t *testing.T) {
	v := newValidator(t)
	u := defaulted(t, v, `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: default}
spec:
  prioritizerPolicy:
    configurations: [{scoreCoordinate: {builtIn: Steady}}]
  tolerations: [{key: gpu}]
  decisionStrategy: {groupStrategy: {}}`)
	want := map[string]any{
		"spec.prioritizerPolicy.mode":                                  "Additive",
		"spec.prioritizerPolicy.configurations.0.weight":               int64(1),
		"spec.prioritizerPolicy.configurations.0.scoreCoordinate.type": "BuiltIn",
		"spec.tolerations.0.operator":                                  "Equal",
		"spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup": "100%",
	}
	for path, w := range want {
		if got := lookup(u, path); got != w {
			t.Errorf("%s = %#v, want %#v", path, got, w)
		}
	}

	u = defaulted(t, v, `apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: s}`)
	if got := lookup(u, "spec.clusterSelector.selectorType"); got != string(clusterv1beta2.ExclusiveClusterSetLabel) {
		t.Errorf("ManagedClusterSet selectorType defaults to %#v, want ExclusiveClusterSetLabel", got)
	}

	u = defaulted(t, v, `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c}
spec: {}`)
	if got := lookup(u, "spec.leaseDurationSeconds"); got != int64(60) {
		t.Errorf("ManagedCluster leaseDurationSeconds defaults to %#v, want 60", got)
	}
}

// lookup walks a dotted path through maps and (numeric) list indexes.
func lookup(obj map[string]any, path string) any {
	var cur any = obj
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// newValidator checks cluster-group documents; the typed object, defaulted as
// the API server would store it, must match the defaulted document exactly.
func newValidator(t *testing.T) *seedcheck.Validator {
	t.Helper()
	v := seedcheck.ForTest(t, crdGlob,
		clusterv1.AddToScheme, clusterv1beta1.AddToScheme, clusterv1beta2.AddToScheme, clusterv1alpha1.AddToScheme)
	v.CompareDefaulted = true
	return v
}

// defaulted validates doc against its CRD and returns it with the CRD defaults
// applied, as the API server would store it.
func defaulted(t *testing.T, v *seedcheck.Validator, doc string) map[string]any {
	t.Helper()
	u, err := v.Defaulted([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

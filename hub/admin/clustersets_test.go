package admin

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

func TestValidateClusterSetName(t *testing.T) {
	for _, ok := range []string{"default", "team-a", "a.b"} {
		if err := ValidateClusterSetName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                      "the name of the clusterset must be specified",
		"Team":                  `clusterset name "Team" is invalid`,
		"a_b":                   `clusterset name "a_b" is invalid`,
		strings.Repeat("a", 64): "must be no more than 63 bytes", // a label value
	} {
		if err := ValidateClusterSetName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", name, err, want)
		}
	}
}

func TestValidateClusterNames(t *testing.T) {
	got, err := ValidateClusterNames([]string{"c2", "c1", "c2"})
	if err != nil || !slices.Equal(got, []string{"c2", "c1"}) {
		t.Errorf("got %v, %v; want [c2 c1] without repeats, in order", got, err)
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "at least one cluster must be given"},
		{[]string{"c1", ""}, "cluster 2 of 2 is an empty name"},
		{[]string{"c.1"}, `cluster name "c.1" is invalid`},
		{[]string{"C1"}, `cluster name "C1" is invalid`},
	} {
		if _, err := ValidateClusterNames(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.in, err, tc.want)
		}
	}
	distinct := make([]string, MaxClusterSetClusters+1)
	for i := range distinct {
		distinct[i] = "c" + strconv.Itoa(i)
	}
	if _, err := ValidateClusterNames(distinct); err == nil || !strings.Contains(err.Error(), "at most 500") {
		t.Errorf("%d clusters: error %v, want the cap", len(distinct), err)
	}
	if _, err := ValidateClusterNames(append(distinct[:MaxClusterSetClusters:MaxClusterSetClusters], distinct[0])); err != nil {
		t.Errorf("%d distinct clusters and a repeat: %v", MaxClusterSetClusters, err)
	}
}

func TestValidateNamespaceName(t *testing.T) {
	if err := ValidateNamespaceName("default"); err != nil {
		t.Error(err)
	}
	for ns, want := range map[string]string{"": "namespace name must be specified", "a.b": `namespace name "a.b" is invalid`} {
		if err := ValidateNamespaceName(ns); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", ns, err, want)
		}
	}
}

func TestValidateManagedNamespaces(t *testing.T) {
	got, err := ValidateManagedNamespaces([]string{"b", " a", "b"})
	if err != nil || !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("got %v, %v; want [b a]", got, err)
	}
	if _, err := ValidateManagedNamespaces([]string{"a", " "}); err == nil || !strings.Contains(err.Error(), "namespace 2 of 2 is an empty name") {
		t.Errorf("blank name: %v", err)
	}
	many := make([]string, MaxManagedNamespaces+1)
	for i := range many {
		many[i] = "n" + strconv.Itoa(i)
	}
	if _, err := ValidateManagedNamespaces(many); err == nil || !strings.Contains(err.Error(), "at most 100") {
		t.Errorf("%d namespaces: %v, want the cap", len(many), err)
	}
}

// clusteradm's lines for set --namespaces (pkg/cmd/clusterset/set/exec.go).
func TestManagedNamespacesMessages(t *testing.T) {
	for _, tc := range []struct {
		r    ManagedNamespacesResult
		want string
	}{
		{ManagedNamespacesResult{Set: "s1", Requested: []string{"a", "b"}, Added: []string{"b"}, Existing: []string{"a"}, Total: 2},
			"Processing managed namespaces: [a b]\nManaged namespace a already exists in Clusterset s1\n\nSuccessfully updated Clusterset s1\n" +
				"Added 1 managed namespace(s): b\nTotal managed namespaces in clusterset: 2"},
		{ManagedNamespacesResult{Set: "s1", Requested: []string{"a"}, Existing: []string{"a"}, Total: 1},
			"Processing managed namespaces: [a]\nManaged namespace a already exists in Clusterset s1\n\nAll specified namespaces already exist in Clusterset s1"},
	} {
		if got := strings.Join(tc.r.Messages(), "\n"); got != tc.want {
			t.Errorf("got\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// The lines are clusteradm's (pkg/cmd/create/clusterset, pkg/cmd/clusterset/{set,bind,unbind}),
// but for an unbind that found no binding.
func TestClusterSetMessages(t *testing.T) {
	for got, want := range map[string]string{
		CreateClusterSetMessage("s1", true):                           "Clusterset s1 is created",
		CreateClusterSetMessage("s1", false):                          "Clusterset s1 is already created",
		ClusterSetMove{Cluster: "c1", To: "s1"}.Message():             "Cluster c1 is set to Clusterset s1",
		ClusterSetMove{Cluster: "c1", From: "s0", To: "s1"}.Message(): "Cluster c1 is set, from ClusterSet s0 to Clusterset s1",
		ClusterSetMove{Cluster: "c1", From: "s1", To: "s1"}.Message(): "Cluster c1 is already in Clusterset s1",
		BindMessage("s1", "ns", false):                                "Clusterset s1 is bound to Namespace ns",
		BindMessage("s1", "ns", true):                                 "Clusterset s1 is already bound to Namespace ns",
		UnbindMessage("s1", "ns", true):                               "Clusterset s1 is unbind from namespace ns",
		UnbindMessage("s1", "ns", false):                              "Clusterset s1 is not bound to namespace ns; nothing to unbind",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestClusterSetTable(t *testing.T) {
	set := &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec:       clusterv1beta2.ManagedClusterSetSpec{ManagedNamespaces: []clusterv1.ManagedNamespaceConfig{{Name: "app-b"}, {Name: "app-a"}}},
		Status: clusterv1beta2.ManagedClusterSetStatus{Conditions: []metav1.Condition{{Type: clusterv1beta2.ManagedClusterSetConditionEmpty,
			Status: metav1.ConditionFalse, Message: "2 ManagedClusters selected"}}},
	}
	bound := []metav1.Condition{{Type: clusterv1beta2.ClusterSetBindingBoundType, Status: metav1.ConditionTrue}}
	bindings := []clusterv1beta2.ManagedClusterSetBinding{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ws2", Name: "s1"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "s1"},
			Status: clusterv1beta2.ManagedClusterSetBindingStatus{Conditions: bound}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ws1", Name: "s1"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "s1"},
			Status: clusterv1beta2.ManagedClusterSetBindingStatus{Conditions: bound}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ws3", Name: "s1"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "s1"}}, // not Bound yet
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ws1", Name: "s2"}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "s2"},
			Status: clusterv1beta2.ManagedClusterSetBindingStatus{Conditions: bound}},
	}
	member := func(name, set string) clusterv1.ManagedCluster {
		return clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: set}}}
	}
	clusters := []clusterv1.ManagedCluster{member("c2", "s1"), member("c3", "s2"), member("c1", "s1")}
	row := clusterSetRow(set, bindings, clusters)
	if row.SelectorType != string(clusterv1beta2.ExclusiveClusterSetLabel) || !slices.Equal(row.BoundNamespaces, []string{"ws1", "ws2"}) ||
		!slices.Equal(row.Clusters, []string{"c1", "c2"}) || !slices.Equal(row.ManagedNamespaces, []string{"app-b", "app-a"}) ||
		row.Status != "2 ManagedClusters selected" {
		t.Errorf("row %+v", row)
	}
	var buf bytes.Buffer
	if err := WriteClusterSets(&buf, []ClusterSetRow{row, clusterSetRow(&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, nil, nil)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "SELECTOR", "BOUND", "NAMESPACES", "CLUSTERS", "MANAGED", "NAMESPACES", "STATUS"}) {
		t.Fatalf("table:\n%s", buf.String())
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got[:5], []string{"s1", "ExclusiveClusterSetLabel", "ws1,ws2", "c1,c2", "app-b,app-a"}) {
		t.Errorf("row s1: %q", got)
	}
	if got := strings.Fields(lines[2]); !slices.Equal(got, []string{"empty", "ExclusiveClusterSetLabel", "-", "-", "-", "-"}) {
		t.Errorf("row empty: %q", got)
	}
}

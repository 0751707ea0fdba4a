package scheduler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// TestCELMatcher: the overrides' celSelector evaluates as a Placement's: all expressions
// true; a compile error names the expression.
func TestCELMatcher(t *testing.T) {
	m := &CELMatcher{}
	c := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{"region": "eu"}}}
	c.Status.Version.Kubernetes = "v1.36.0"
	for _, tc := range []struct {
		exprs []string
		want  bool
	}{
		{[]string{`managedCluster.metadata.labels["region"] == "eu"`}, true},
		{[]string{`managedCluster.metadata.labels["region"] == "eu"`, `managedCluster.status.version.kubernetes == "v1.40.0"`}, false},
	} {
		got, err := m.MatchCEL(t.Context(), tc.exprs, c)
		if err != nil || got != tc.want {
			t.Fatalf("MatchCEL(%q) = %v, %v; want %v", tc.exprs, got, err, tc.want)
		}
	}
	if _, err := m.MatchCEL(t.Context(), []string{"true", "managedCluster.("}, c); err == nil || !strings.Contains(err.Error(), "celExpressions[1]") {
		t.Fatalf("a bad expression: %v, want an error naming celExpressions[1]", err)
	}
}

package commands

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
	"github.com/flotilla-dev/flotilla/hub/admin"
)

// TestPlacementCommandsHaveHelp checks that --help documents get placements and
// create work --placement with examples.
func TestPlacementCommandsHaveHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"get", "--help"}, []string{"placements "}},
		{[]string{"get", "placements", "--help"}, []string{"Examples:", "-n, --namespace", "-A, --all-namespaces", "--kubeconfig",
			"PlacementSatisfied", "decision groups", "flotilla get placements placement1 -n default", "flotilla get placements -A",
			"--placement default/placement1"}},
		{[]string{"create", "--help"}, []string{"flotilla create work hello-work-demo -f hello.yaml --placement default/placement1"}},
		{[]string{"create", "work", "--help"}, []string{"--placement string", "PlacementDecisions", "mutually exclusive",
			"flotilla create work hello-work-demo -f hello.yaml --placement default/placement1"}},
	} {
		out, err := workCLI(t.Context(), strings.NewReader(""), tc.args...)
		if err != nil {
			t.Errorf("flotilla %v: %v", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("flotilla %v does not show %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestPlacementCommandErrors checks the flag errors of `get placements` and
// `create work --placement` that come before the hub is contacted: nothing listens at the
// kubeconfig's server.
func TestPlacementCommandErrors(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "hub.kubeconfig")
	if err := environment.WriteKubeconfig(kc, "hub", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	good := workWriteFile(t, filepath.Join(dir, "hello.yaml"), helloDeployment)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"create work with --clusters and --placement", []string{"create", "work", "w", "-f", good, "--clusters", "c1", "--placement", "default/p"},
			[]string{"--clusters and --placement are mutually exclusive"}},
		{"create work with neither --clusters nor --placement", []string{"create", "work", "w", "-f", good},
			[]string{"--clusters or --placement is required"}},
		{"create work with a placement without namespace", []string{"create", "work", "w", "-f", good, "--placement", "p"},
			[]string{`--placement: placement "p": want NAMESPACE/NAME`}},
		{"create work with a placement of three parts", []string{"create", "work", "w", "-f", good, "--placement", "a/b/c"},
			[]string{`placement "a/b/c": want NAMESPACE/NAME`}},
		{"get placements with -n and -A", []string{"get", "placements", "-n", "default", "-A"},
			[]string{"-n/--namespace and -A/--all-namespaces are mutually exclusive"}},
		{"get placements NAME with -A", []string{"get", "placements", "p", "-A"},
			[]string{"-A/--all-namespaces cannot be used with a placement name"}},
		{"get placements NS/NAME with another -n", []string{"get", "placements", "apps/p", "-n", "default"},
			[]string{"placement apps/p is in namespace apps, but -n says default"}},
		{"get placements with a bad NS/NAME", []string{"get", "placements", "/p"}, []string{`placement "/p": want NAMESPACE/NAME`}},
		{"get placements with two names", []string{"get", "placements", "a", "b"}, []string{"accepts at most 1 arg(s)"}},
		{"get mwrs NAME with -A", []string{"get", "mwrs", "r", "-A"},
			[]string{"-A/--all-namespaces cannot be used with a ManifestWorkReplicaSet name"}},
		{"get mwrs NS/NAME with another -n", []string{"get", "mwrs", "apps/r", "-n", "default"},
			[]string{"ManifestWorkReplicaSet apps/r is in namespace apps, but -n says default"}},
		{"rollout status without namespace", []string{"rollout", "status", "r"}, []string{`ManifestWorkReplicaSet "r": want NAMESPACE/NAME`}},
		{"get placements with a missing kubeconfig", []string{"get", "placements", "--kubeconfig", filepath.Join(dir, "missing")},
			[]string{"loading kubeconfig", filepath.Join(dir, "missing")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--kubeconfig") {
				args = append(args, "--kubeconfig", kc)
			}
			out, err := workCLI(ctx, strings.NewReader(""), args...)
			if err == nil {
				t.Fatalf("flotilla %v succeeded, want an error containing %q\nstdout:\n%s", tc.args, tc.want, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("flotilla %v: error %q does not contain %q", tc.args, err, w)
				}
			}
		})
	}
}

// TestPlacementCommands runs `flotilla get placements` and `flotilla create work --placement`
// against a real hub API server. No placement controller runs: the test writes Placements'
// status and their PlacementDecisions as the controller would.
func TestPlacementCommands(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	hubKC := fleet.Hub.KubeconfigPath
	c, _, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	run := func(args ...string) (string, error) {
		return workCLI(ctx, strings.NewReader(""), append(args, "--kubeconfig", hubKC)...)
	}
	mustRun := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatalf("flotilla %v: %v\nstdout:\n%s", args, err, out)
		}
		return out
	}
	mustCreate := func(obj client.Object) {
		t.Helper()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	}
	// placement creates a Placement and writes its status as the placement controller would.
	placement := func(ns, name string, n *int32, status clusterv1beta1.PlacementStatus) {
		t.Helper()
		p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		p.Spec.NumberOfClusters = n
		mustCreate(p)
		if reflect.DeepEqual(status, clusterv1beta1.PlacementStatus{}) {
			return
		}
		p.Status = status
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatalf("writing the status of Placement %s/%s: %v", ns, name, err)
		}
	}
	// decision creates the PlacementDecision name of placement in group index, listing
	// clusters (name:score).
	decision := func(ns, name, placement string, index int, clusters ...clusterv1beta1.ClusterDecision) {
		t.Helper()
		d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			clusterv1beta1.PlacementLabel:          placement,
			clusterv1beta1.DecisionGroupIndexLabel: fmt.Sprint(index),
		}}}
		mustCreate(d)
		d.Status.Decisions = append([]clusterv1beta1.ClusterDecision{}, clusters...)
		if err := c.Status().Update(ctx, d); err != nil {
			t.Fatalf("writing the status of PlacementDecision %s/%s: %v", ns, name, err)
		}
	}
	cd := func(cluster string, score int64) clusterv1beta1.ClusterDecision {
		return clusterv1beta1.ClusterDecision{ClusterName: cluster, Score: score}
	}
	getWork := func(cluster, name string) *workv1.ManifestWork {
		t.Helper()
		w := &workv1.ManifestWork{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
			t.Fatalf("reading ManifestWork %s/%s: %v", cluster, name, err)
		}
		return w
	}
	wantNoWork := func(cluster, name string) {
		t.Helper()
		err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, &workv1.ManifestWork{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("ManifestWork %s/%s: got %v, want it not to exist", cluster, name, err)
		}
	}

	// cluster1-4 are accepted (they have their namespace); pending is not yet.
	accepted := []string{"cluster1", "cluster2", "cluster3", "cluster4"}
	for _, name := range append(accepted, "pending") {
		mustCreate(&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, name := range append(accepted, "apps") {
		mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}

	three := int32(3)
	satisfied := cond(clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue,
		clusterv1beta1.PlacementReasonAllDecisionsScheduled, "All cluster decisions scheduled")
	configured := cond(clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionFalse,
		clusterv1beta1.PlacementReasonSucceedconfigured, "Placement configurations check pass")
	// default/web: two decision groups, a canary of one cluster and the rest; decision order
	// is cluster2, cluster1, cluster3 (by score, as sortBy Score would write them).
	placement("default", "web", &three, clusterv1beta1.PlacementStatus{
		NumberOfSelectedClusters: 3,
		Conditions:               []metav1.Condition{satisfied, configured},
		DecisionGroups: []clusterv1beta1.DecisionGroupStatus{
			{DecisionGroupIndex: 0, DecisionGroupName: "canary", ClustersCount: 1, Decisions: []string{"web-decision-1"}},
			{DecisionGroupIndex: 1, ClustersCount: 2, Decisions: []string{"web-decision-2"}},
		},
	})
	decision("default", "web-decision-2", "web", 1, cd("cluster1", 80), cd("cluster3", 10))
	decision("default", "web-decision-1", "web", 0, cd("cluster2", 90))
	// A decision of another placement in the namespace must not count for web.
	decision("default", "db-decision-1", "db", 0, cd("cluster4", 0))
	// default/empty: decided, but no cluster matched.
	placement("default", "empty", nil, clusterv1beta1.PlacementStatus{
		Conditions: []metav1.Condition{configured, cond(clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse,
			clusterv1beta1.PlacementReasonNoManagedClusterMatched, "No valid ManagedClusterSetBindings found in placement namespace")},
		DecisionGroups: []clusterv1beta1.DecisionGroupStatus{{DecisionGroupIndex: 0, Decisions: []string{"empty-decision-1"}}},
	})
	decision("default", "empty-decision-1", "empty", 0)
	// apps/fresh: not decided yet, no status and no decisions.
	placement("apps", "fresh", nil, clusterv1beta1.PlacementStatus{})
	// apps/bad: misconfigured.
	placement("apps", "bad", nil, clusterv1beta1.PlacementStatus{Conditions: []metav1.Condition{
		cond(clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionTrue, clusterv1beta1.PlacementReasonMisconfigured,
			`failed to find prioritizer "nope"`)}})
	// apps/wide: 30 clusters (that need not exist to be listed), more than fit in the table.
	var wide []clusterv1beta1.ClusterDecision
	for i := 1; i <= 30; i++ {
		wide = append(wide, cd(fmt.Sprintf("member-%02d", i), 0))
	}
	placement("apps", "wide", nil, clusterv1beta1.PlacementStatus{NumberOfSelectedClusters: 30, Conditions: []metav1.Condition{satisfied, configured}})
	decision("apps", "wide-decision-1", "wide", 0, wide...)
	// apps/pending: selects a cluster that is not accepted.
	placement("apps", "pending", nil, clusterv1beta1.PlacementStatus{NumberOfSelectedClusters: 2, Conditions: []metav1.Condition{satisfied, configured}})
	decision("apps", "pending-decision-1", "pending", 0, cd("cluster4", 0), cd("pending", 0))

	// placementFields splits a placements table into its cells; the CLUSTERS cell, the
	// last, may hold a space ("+N more").
	placementFields := func(out string) [][]string {
		var rows [][]string
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			f := strings.Fields(l)
			if len(f) > 6 {
				f = append(f[:5], strings.Join(f[5:], " "))
			}
			rows = append(rows, f)
		}
		return rows
	}
	header := []string{"NAMESPACE", "NAME", "SATISFIED", "REASON", "SELECTED", "CLUSTERS"}
	defaultRows := [][]string{
		header,
		{"default", "empty", "False", "NoManagedClusterMatched", "0", "-"},
		{"default", "web", "True", "AllDecisionsScheduled", "3", "cluster2,cluster1,cluster3"},
	}
	// Without -n: the kubeconfig's context sets no namespace, so default.
	out := mustRun("get", "placements")
	t.Logf("get placements:\n%s", out)
	if got := placementFields(out); !reflect.DeepEqual(got, defaultRows) {
		t.Errorf("get placements:\n%s\nfields %q, want %q", out, got, defaultRows)
	}
	if got := placementFields(mustRun("get", "placements", "-n", "default")); !reflect.DeepEqual(got, defaultRows) {
		t.Errorf("get placements -n default: fields %q, want %q", got, defaultRows)
	}
	appsRows := [][]string{
		header,
		{"apps", "bad", "-", "Misconfigured", "0", "-"},
		{"apps", "fresh", "-", "-", "0", "-"},
		{"apps", "pending", "True", "AllDecisionsScheduled", "2", "cluster4,pending"},
		{"apps", "wide", "True", "AllDecisionsScheduled", "30", "member-01,member-02,member-03,member-04,member-05,+25 more"},
	}
	// A kubeconfig whose context sets namespace apps.
	kc, err := clientcmd.LoadFromFile(hubKC)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = "apps"
	appsKC := filepath.Join(t.TempDir(), "apps.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, appsKC); err != nil {
		t.Fatal(err)
	}
	out, err = workCLI(ctx, strings.NewReader(""), "get", "placements", "--kubeconfig", appsKC)
	if err != nil {
		t.Fatalf("get placements with namespace apps in the kubeconfig: %v", err)
	}
	t.Logf("get placements (context namespace apps):\n%s", out)
	if got := placementFields(out); !reflect.DeepEqual(got, appsRows) {
		t.Errorf("get placements (context namespace apps):\n%s\nfields %q, want %q", out, got, appsRows)
	}
	out = mustRun("get", "placements", "-A")
	if got, want := placementFields(out), append(appsRows, defaultRows[1:]...); !reflect.DeepEqual(got, want) {
		t.Errorf("get placements -A:\n%s\nfields %q, want %q", out, got, want)
	}
	if got := placementFields(mustRun("get", "placements", "-n", "nowhere")); !reflect.DeepEqual(got, [][]string{header}) {
		t.Errorf("get placements -n nowhere: fields %q, want only the header", got)
	}

	// One placement in detail, by -n and by NAMESPACE/NAME.
	out = mustRun("get", "placements", "web", "-n", "default")
	t.Logf("get placements web -n default:\n%s", out)
	// The Age line may tick between the two runs.
	ageless := func(s string) string { return regexp.MustCompile(`(?m)^Age:.*$`).ReplaceAllString(s, "Age:") }
	if out2 := mustRun("get", "placements", "default/web"); ageless(out2) != ageless(out) {
		t.Errorf("get placements default/web printed\n%s\nwant the same as with -n default:\n%s", out2, out)
	}
	wantLines := func(args []string, out string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !containsLine(out, l) {
				t.Errorf("flotilla %v does not show the line %q:\n%s", args, l, out)
			}
		}
	}
	wantLines([]string{"get", "placements", "web"}, out,
		"Name:       web",
		"Namespace:  default",
		"Requested:  3",
		"Selected:   3",
		"Conditions:",
		"  PlacementSatisfied      True    AllDecisionsScheduled  All cluster decisions scheduled",
		"  PlacementMisconfigured  False   Succeedconfigured      Placement configurations check pass",
		"Decision groups: 2",
		"  INDEX  NAME    CLUSTERS  DECISIONS",
		"  0      canary  1         web-decision-1",
		"  1      -       2         web-decision-2",
		"Decisions: 3",
		"  CLUSTER   SCORE  PLACEMENTDECISION",
		"  cluster2  90     web-decision-1",
		"  cluster1  80     web-decision-2",
		"  cluster3  10     web-decision-2",
	)
	if i, j := strings.Index(out, "  cluster2 "), strings.Index(out, "  cluster1 "); i < 0 || j < i {
		t.Errorf("get placements web does not list cluster2 before cluster1 (decision order):\n%s", out)
	}
	out = mustRun("get", "placements", "empty", "-n", "default")
	wantLines([]string{"get", "placements", "empty"}, out, "Requested:  all feasible clusters", "Selected:   0",
		"Decisions: none (PlacementDecisions empty-decision-1 list no cluster)")
	out = mustRun("get", "placements", "apps/fresh")
	wantLines([]string{"get", "placements", "apps/fresh"}, out,
		"Conditions: none reported yet (is the hub's placement controller running?)",
		"Decision groups: none reported", "Decisions: none (no PlacementDecisions)")
	if _, err := run("get", "placements", "nope", "-n", "default"); err == nil || err.Error() != "placement default/nope not found" {
		t.Errorf("get placements of a missing placement: error %v, want placement default/nope not found", err)
	}

	// create work --placement deploys to the clusters web selects, in decision order; not
	// to cluster4, which only another placement selects.
	dir := t.TempDir()
	hello := workWriteFile(t, filepath.Join(dir, "hello.yaml"), helloDeployment)
	out = mustRun("create", "work", "hello", "-f", hello, "--placement", "default/web")
	if want := "manifestwork hello created in cluster2\nmanifestwork hello created in cluster1\nmanifestwork hello created in cluster3\n"; out != want {
		t.Errorf("create work --placement default/web printed %q, want %q", out, want)
	}
	for _, cl := range []string{"cluster1", "cluster2", "cluster3"} {
		if got := manifestIDs(t, getWork(cl, "hello")); !reflect.DeepEqual(got, []string{"Deployment/default/hello"}) {
			t.Errorf("ManifestWork %s/hello has manifests %v", cl, got)
		}
	}
	wantNoWork("cluster4", "hello")

	// Again: the works exist, so without --replace nothing is written.
	single := workWriteFile(t, filepath.Join(dir, "single.json"), `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"}}`)
	if out, err := run("create", "work", "hello", "-f", single, "--placement", "default/web"); err == nil ||
		!strings.Contains(err.Error(), "placement default/web selects cluster2, cluster1, cluster3: manifestwork hello already exists in clusters cluster2, cluster1, cluster3") {
		t.Errorf("create work --placement of existing works: error %v, printed %q", err, out)
	}
	// The placement now selects cluster4 too: --replace updates the three and creates the
	// fourth.
	decision("default", "web-decision-3", "web", 1, cd("cluster4", 5))
	out = mustRun("create", "work", "hello", "-f", single, "--placement", "default/web", "--replace")
	if want := "manifestwork hello updated in cluster2\nmanifestwork hello updated in cluster1\nmanifestwork hello updated in cluster3\n" +
		"manifestwork hello created in cluster4\n"; out != want {
		t.Errorf("create work --placement default/web --replace printed %q, want %q", out, want)
	}
	for _, cl := range accepted {
		if got := manifestIDs(t, getWork(cl, "hello")); !reflect.DeepEqual(got, []string{"Secret/default/s"}) {
			t.Errorf("ManifestWork %s/hello has manifests %v after --replace", cl, got)
		}
		if got := getWork(cl, "hello").Labels[admin.PlacementWorkLabel]; got != "default.web" {
			t.Errorf("ManifestWork %s/hello is labelled %s=%q, want default.web", cl, admin.PlacementWorkLabel, got)
		}
	}
	// The placement drops cluster4: --overwrite (clusteradm's name for --replace) takes the
	// work away from it, and only the work this placement put there.
	other := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster4", Name: "unrelated"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: getWork("cluster4", "hello").Spec.Workload.Manifests}}}
	mustCreate(other)
	if err := c.Delete(ctx, &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-decision-3"}}); err != nil {
		t.Fatal(err)
	}
	out = mustRun("create", "work", "hello", "-f", single, "--placement", "default/web", "--overwrite")
	if want := "manifestwork hello updated in cluster2\nmanifestwork hello updated in cluster1\nmanifestwork hello updated in cluster3\n" +
		"manifestwork hello deleted from cluster4 (no longer selected)\n"; out != want {
		t.Errorf("create work --placement default/web --overwrite printed %q, want %q", out, want)
	}
	wantNoWork("cluster4", "hello")
	getWork("cluster4", "unrelated")

	// Placements that select nothing, or what cannot take work, write nothing.
	for _, tc := range []struct {
		placement string
		want      []string
	}{
		{"default/empty", []string{"placement default/empty has no decisions", "its PlacementDecisions empty-decision-1 list no cluster",
			"PlacementSatisfied False, NoManagedClusterMatched", "no ManifestWork was written"}},
		{"apps/fresh", []string{"placement apps/fresh has no decisions", "no PlacementDecisions are labelled cluster.open-cluster-management.io/placement=fresh",
			"no PlacementSatisfied condition yet"}},
		{"apps/bad", []string{"placement apps/bad has no decisions", `PlacementMisconfigured: failed to find prioritizer "nope"`}},
		{"default/nope", []string{"placement default/nope not found", "no ManifestWork was written"}},
		{"apps/pending", []string{"placement apps/pending selects cluster4, pending", "cluster pending is not accepted yet"}},
	} {
		out, err := run("create", "work", "other", "-f", hello, "--placement", tc.placement)
		if err == nil {
			t.Errorf("create work --placement %s succeeded, printing %q", tc.placement, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("create work --placement %s: error %q does not contain %q", tc.placement, err, w)
			}
		}
		if out != "" {
			t.Errorf("create work --placement %s printed %q, want nothing", tc.placement, out)
		}
		for _, cl := range accepted {
			wantNoWork(cl, "other")
		}
	}
}

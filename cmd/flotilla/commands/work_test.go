package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/fleettest"
)

// workCLI runs `flotilla args...` from NewRoot with stdin as standard input.
func workCLI(ctx context.Context, stdin io.Reader, args ...string) (stdout string, err error) {
	root := NewRoot()
	var out, errw bytes.Buffer
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errw)
	err = root.ExecuteContext(ctx)
	return out.String(), err
}

func workWriteFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// manifestIDs returns kind/namespace/name of each manifest of w, in order.
func manifestIDs(t *testing.T, w *workv1.ManifestWork) []string {
	t.Helper()
	var out []string
	for i, m := range w.Spec.Workload.Manifests {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name, Namespace string }
		}
		if err := json.Unmarshal(m.Raw, &o); err != nil {
			t.Fatalf("manifest %d of %s/%s: %v", i, w.Namespace, w.Name, err)
		}
		out = append(out, o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name)
	}
	return out
}

const helloDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: default
spec:
  selector:
    matchLabels:
      app: hello
  template:
    metadata:
      labels:
        app: hello
    spec:
      containers:
        - name: hello
          image: quay.io/asmacdo/busybox
          command: ["sh", "-c", 'echo "Hello, Kubernetes!" && sleep 3600']
`

// TestWorkCommandsHaveHelp checks that --help shows how to deploy a work and read its feedback.
func TestWorkCommandsHaveHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"create ", "get "}},
		{[]string{"create", "--help"}, []string{"work ", "flotilla create work hello-work-demo -f hello.yaml"}},
		{[]string{"create", "work", "--help"}, []string{"Examples:", "-f, --filename", "--clusters", "--replace", "--kubeconfig",
			"flotilla create work hello-work-demo -f hello.yaml --clusters cluster1,cluster2", "-f - --clusters cluster1"}},
		{[]string{"get", "works", "--help"}, []string{"Examples:", "--cluster", "--kubeconfig", "JSONPaths", "WellKnownStatus",
			"kubectl patch manifestwork hello-work-demo", "flotilla get works hello-work-demo --cluster cluster1"}},
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

// TestWorkCommandErrors checks the errors of `create work` and `get works` that come before
// the hub is contacted: the kubeconfig points at a port nothing listens on, so an error
// about the hub would show the command got further than it should.
func TestWorkCommandErrors(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "hub.kubeconfig")
	if err := environment.WriteKubeconfig(kc, "hub", &rest.Config{Host: "https://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	good := workWriteFile(t, filepath.Join(dir, "hello.yaml"), helloDeployment)
	mw := workWriteFile(t, filepath.Join(dir, "mw.yaml"), helloDeployment+`---
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: hello-work-demo, namespace: cluster1}
spec: {workload: {manifests: []}}
`)
	noKind := workWriteFile(t, filepath.Join(dir, "nokind.yaml"), helloDeployment+"---\napiVersion: v1\nmetadata: {name: x}\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"create work without -f", []string{"create", "work", "w", "--clusters", "c1"}, []string{"-f/--filename is required"}},
		{"create work without --clusters", []string{"create", "work", "w", "-f", good}, []string{"--clusters or --placement is required"}},
		{"create work without a name", []string{"create", "work", "-f", good, "--clusters", "c1"}, []string{"accepts 1 arg(s), received 0"}},
		{"create work of a ManifestWork", []string{"create", "work", "w", "-f", mw, "--clusters", "c1"},
			[]string{mw + ": document 2: ManifestWork hello-work-demo is not a manifest to deploy", "kubectl apply"}},
		{"create work of a manifest without kind", []string{"create", "work", "w", "-f", noKind, "--clusters", "c1"},
			[]string{noKind + ": document 2: missing kind"}},
		{"create work of a missing file", []string{"create", "work", "w", "-f", filepath.Join(dir, "nope.yaml"), "--clusters", "c1"},
			[]string{filepath.Join(dir, "nope.yaml")}},
		{"get works NAME without --cluster", []string{"get", "works", "w"}, []string{"--cluster is required with a work name"}},
		{"get works with two names", []string{"get", "works", "a", "b", "--cluster", "c1"}, []string{"accepts at most 1 arg(s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, err := workCLI(ctx, strings.NewReader(""), append(tc.args, "--kubeconfig", kc)...)
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

// TestWorkCommands runs `flotilla create work` and `flotilla get works` against a real hub API
// server. No hub controllers or agents run: the test creates the ManagedClusters and cluster
// namespaces registration would, and writes a ManifestWork's status as a work agent would.
func TestWorkCommands(t *testing.T) {
	fleet := fleettest.StartT(t, environment.Options{})
	hubKC := fleet.Hub.KubeconfigPath
	c, _, err := hubClientsForConfig(fleet.Hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	run := func(stdin string, args ...string) (string, error) {
		return workCLI(ctx, strings.NewReader(stdin), append(args, "--kubeconfig", hubKC)...)
	}
	mustRun := func(stdin string, args ...string) string {
		t.Helper()
		out, err := run(stdin, args...)
		if err != nil {
			t.Fatalf("flotilla %v: %v\nstdout:\n%s", args, err, out)
		}
		return out
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

	// cluster1 and cluster2 are accepted (they have their namespace); pending is not yet.
	for _, name := range []string{"cluster1", "cluster2", "pending"} {
		if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"cluster1", "cluster2"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	hello := workWriteFile(t, filepath.Join(dir, "hello.yaml"), helloDeployment+`---
apiVersion: v1
kind: ConfigMap
metadata: {name: hello-config, namespace: default}
data: {greeting: hi}
`)
	helloIDs := []string{"Deployment/default/hello", "ConfigMap/default/hello-config"}

	// Create in two clusters: one line per cluster, the manifests in file order.
	out := mustRun("", "create", "work", "hello-work-demo", "-f", hello, "--clusters", "cluster1,cluster2")
	if want := "manifestwork hello-work-demo created in cluster1\nmanifestwork hello-work-demo created in cluster2\n"; out != want {
		t.Errorf("create work printed %q, want %q", out, want)
	}
	for _, cl := range []string{"cluster1", "cluster2"} {
		w := getWork(cl, "hello-work-demo")
		if got := manifestIDs(t, w); !reflect.DeepEqual(got, helloIDs) {
			t.Errorf("ManifestWork %s/hello-work-demo has manifests %v, want %v", cl, got, helloIDs)
		}
		if !bytes.Contains(w.Spec.Workload.Manifests[0].Raw, []byte(`"image":"quay.io/asmacdo/busybox"`)) {
			t.Errorf("the Deployment manifest lost its content: %s", w.Spec.Workload.Manifests[0].Raw)
		}
	}

	// Unknown and unaccepted clusters fail before anything is written.
	for _, tc := range []struct {
		clusters string
		want     []string
	}{
		{"cluster1,nope,cluster2", []string{"unknown cluster nope", "no ManagedCluster"}},
		{"cluster1,pending", []string{"cluster pending is not accepted yet", "flotilla accept --clusters pending"}},
	} {
		out, err := run("", "create", "work", "other", "-f", hello, "--clusters", tc.clusters)
		if err == nil {
			t.Errorf("create work --clusters %s succeeded, printing %q", tc.clusters, out)
		} else {
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("create work --clusters %s: error %q does not contain %q", tc.clusters, err, w)
				}
			}
		}
		if out != "" {
			t.Errorf("create work --clusters %s printed %q, want nothing", tc.clusters, out)
		}
		wantNoWork("cluster1", "other")
		wantNoWork("cluster2", "other")
	}

	// A ManifestWork of the name exists in one cluster: without --replace nothing is written
	// in any cluster, and the error names where it exists.
	mustRun("", "create", "work", "fresh", "-f", hello, "--clusters", "cluster2")
	before := getWork("cluster2", "fresh")
	single := workWriteFile(t, filepath.Join(dir, "single.json"), `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"}}`)
	out, err = run("", "create", "work", "fresh", "-f", single, "--clusters", "cluster1,cluster2")
	if err == nil || !strings.Contains(err.Error(), "manifestwork fresh already exists in cluster cluster2") || !strings.Contains(err.Error(), "--replace") {
		t.Errorf("create work of an existing name: error %v, want it to name cluster2 and --replace; printed %q", err, out)
	}
	wantNoWork("cluster1", "fresh")
	if after := getWork("cluster2", "fresh"); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the refused create changed ManifestWork cluster2/fresh: %v", manifestIDs(t, after))
	}
	// With --replace: created where missing, updated where present.
	out = mustRun("", "create", "work", "fresh", "-f", single, "--clusters", "cluster1,cluster2", "--replace")
	if want := "manifestwork fresh created in cluster1\nmanifestwork fresh updated in cluster2\n"; out != want {
		t.Errorf("create work --replace printed %q, want %q", out, want)
	}
	for _, cl := range []string{"cluster1", "cluster2"} {
		if got, want := manifestIDs(t, getWork(cl, "fresh")), []string{"Secret/default/s"}; !reflect.DeepEqual(got, want) {
			t.Errorf("ManifestWork %s/fresh has manifests %v, want %v", cl, got, want)
		}
	}

	// --replace replaces the manifests and keeps every other field set meanwhile (here as a
	// user would with kubectl patch): feedback rules, delete option, labels.
	patch := `{"metadata":{"labels":{"team":"demo"}},"spec":{
		"deleteOption":{"propagationPolicy":"Orphan"},
		"manifestConfigs":[{"resourceIdentifier":{"group":"apps","resource":"deployments","namespace":"default","name":"hello"},
			"feedbackRules":[{"type":"JSONPaths","jsonPaths":[{"name":"replicas","path":".status.replicas"}]}]}]}}`
	if err := c.Patch(ctx, getWork("cluster1", "hello-work-demo"), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	patched := getWork("cluster1", "hello-work-demo")
	manifestsDir := filepath.Join(dir, "manifests")
	workWriteFile(t, filepath.Join(manifestsDir, "2-deploy.yaml"), helloDeployment)
	workWriteFile(t, filepath.Join(manifestsDir, "1-namespace.json"), `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"}}`)
	workWriteFile(t, filepath.Join(manifestsDir, "README.md"), "not a manifest")
	out = mustRun("", "create", "work", "hello-work-demo", "-f", manifestsDir, "--clusters", "cluster1,cluster2", "--replace")
	if want := "manifestwork hello-work-demo updated in cluster1\nmanifestwork hello-work-demo updated in cluster2\n"; out != want {
		t.Errorf("create work --replace printed %q, want %q", out, want)
	}
	replaced := getWork("cluster1", "hello-work-demo")
	if got, want := manifestIDs(t, replaced), []string{"Namespace//demo", "Deployment/default/hello"}; !reflect.DeepEqual(got, want) {
		t.Errorf("replaced manifests %v, want %v", got, want)
	}
	if !reflect.DeepEqual(replaced.Spec.ManifestConfigs, patched.Spec.ManifestConfigs) || len(replaced.Spec.ManifestConfigs) != 1 ||
		replaced.Spec.DeleteOption == nil || replaced.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeOrphan ||
		replaced.Labels["team"] != "demo" {
		t.Errorf("--replace lost fields: manifestConfigs %+v, deleteOption %+v, labels %v",
			replaced.Spec.ManifestConfigs, replaced.Spec.DeleteOption, replaced.Labels)
	}
	if replaced.UID != patched.UID {
		t.Errorf("--replace recreated the ManifestWork (UID %s, was %s)", replaced.UID, patched.UID)
	}

	// Standard input.
	out = mustRun("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}\n"+
		"- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}}\n",
		"create", "work", "from-stdin", "-f", "-", "--clusters", "cluster2")
	if want := "manifestwork from-stdin created in cluster2\n"; out != want {
		t.Errorf("create work -f - printed %q, want %q", out, want)
	}
	if got, want := manifestIDs(t, getWork("cluster2", "from-stdin")), []string{"ConfigMap/default/a", "ConfigMap/default/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ManifestWork cluster2/from-stdin has manifests %v, want %v", got, want)
	}

	// Report status as cluster1's work agent would: Applied, not yet Available, and feedback
	// values on the Deployment (ordinal 1).
	w := getWork("cluster1", "hello-work-demo")
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
	}
	replicas, image := int64(3), "quay.io/asmacdo/busybox"
	w.Status.Conditions = []metav1.Condition{
		cond(workv1.WorkApplied, metav1.ConditionTrue, workv1.WorkAppliedReasonComplete, "Apply manifest work complete"),
		cond(workv1.WorkAvailable, metav1.ConditionFalse, workv1.WorkAvailableReasonNotAvailable, "1 of 2 resources are not available"),
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 0, Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: "demo"},
			Conditions:   []metav1.Condition{cond(workv1.ManifestAvailable, metav1.ConditionFalse, "ResourceNotAvailable", "Resource is not available")},
		},
		{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 1, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "hello", Namespace: "default"},
			Conditions: []metav1.Condition{
				cond(workv1.ManifestApplied, metav1.ConditionTrue, workv1.ManifestAppliedReasonComplete, "Apply manifest complete"),
				cond(workv1.ManifestStatusFeedbackSynced, metav1.ConditionTrue, "StatusFeedbackSynced", ""),
			},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				{Name: "replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: &replicas}},
				{Name: "image", Value: workv1.FieldValue{Type: workv1.String, String: &image}},
			}},
		},
	}
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatalf("writing the status of ManifestWork cluster1/hello-work-demo: %v", err)
	}

	// The table of one cluster.
	out = mustRun("", "get", "works", "--cluster", "cluster1")
	want := [][]string{
		{"NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"},
		{"fresh", "1", "-", "-"},
		{"hello-work-demo", "2", "True", "False"},
	}
	if got := tableFields(out); !reflect.DeepEqual(got, want) {
		t.Errorf("get works --cluster cluster1:\n%s\nfields (without AGE) %q, want %q", out, got, want)
	}
	// Every cluster's works, with a CLUSTER column.
	out = mustRun("", "get", "works")
	want = [][]string{
		{"CLUSTER", "NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"},
		{"cluster1", "fresh", "1", "-", "-"},
		{"cluster1", "hello-work-demo", "2", "True", "False"},
		{"cluster2", "fresh", "1", "-", "-"},
		{"cluster2", "from-stdin", "2", "-", "-"},
		{"cluster2", "hello-work-demo", "2", "-", "-"},
	}
	if got := tableFields(out); !reflect.DeepEqual(got, want) {
		t.Errorf("get works:\n%s\nfields (without AGE) %q, want %q", out, got, want)
	}

	// One work in detail: its conditions, then each manifest with conditions and feedback.
	out = mustRun("", "get", "works", "hello-work-demo", "--cluster", "cluster1")
	t.Logf("get works hello-work-demo --cluster cluster1:\n%s", out)
	for _, wantLine := range []string{
		"Name:     hello-work-demo",
		"Cluster:  cluster1",
		"  Applied    True    AppliedManifestWorkComplete  Apply manifest work complete",
		"  Available  False   ResourcesNotAvailable        1 of 2 resources are not available",
		"Manifests: 2",
		"  [0] Namespace demo (v1)",
		"      Available  False   ResourceNotAvailable  Resource is not available",
		"  [1] Deployment default/hello (apps/v1)",
		"      Applied               True    AppliedManifestComplete  Apply manifest complete",
		"      StatusFeedbackSynced  True    StatusFeedbackSynced     -",
		"    Feedback:",
		"      replicas=3",
		"      image=quay.io/asmacdo/busybox",
	} {
		if !containsLine(out, wantLine) {
			t.Errorf("get works hello-work-demo does not show the line %q", wantLine)
		}
	}
	// cluster2's copy has no status yet.
	out = mustRun("", "get", "works", "hello-work-demo", "--cluster", "cluster2")
	for _, wantLine := range []string{"Conditions: none reported yet (has the cluster's work agent synced this work?)",
		"  [1] Deployment default/hello (apps/v1)", "    Status: not reported yet"} {
		if !containsLine(out, wantLine) {
			t.Errorf("get works hello-work-demo --cluster cluster2 does not show the line %q:\n%s", wantLine, out)
		}
	}

	// Errors name what is missing.
	if _, err := run("", "get", "works", "nope", "--cluster", "cluster1"); err == nil || err.Error() != "manifestwork nope not found in cluster cluster1" {
		t.Errorf("get works of a missing work: error %v", err)
	}
	if _, err := run("", "get", "works", "--cluster", "nope"); err == nil || err.Error() != "unknown cluster nope: no ManagedCluster of that name on the hub" {
		t.Errorf("get works of an unknown cluster: error %v", err)
	}
	// A ManifestWork being deleted (its agent's finalizer still on it) is not replaced.
	going := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "going", Finalizers: []string{"example.com/hold"}}}
	going.Spec.Workload.Manifests = getWork("cluster1", "fresh").Spec.Workload.Manifests
	if err := c.Create(ctx, going); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, going); err != nil {
		t.Fatal(err)
	}
	if out, err := run("", "create", "work", "going", "-f", hello, "--clusters", "cluster1", "--replace"); err == nil ||
		!strings.Contains(err.Error(), "ManifestWork going is being deleted") {
		t.Errorf("create work --replace of a work being deleted: error %v, printed %q", err, out)
	}
	if got := manifestIDs(t, getWork("cluster1", "going")); !reflect.DeepEqual(got, []string{"Secret/default/s"}) {
		t.Errorf("the ManifestWork being deleted was changed: %v", got)
	}

	// An accepted cluster without works is an empty table, not an error.
	if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}); err != nil {
		t.Fatal(err)
	}
	if out, err := run("", "get", "works", "--cluster", "empty"); err != nil || len(tableFields(out)) != 1 {
		t.Errorf("get works --cluster empty: %v\n%s", err, out)
	}
}

// tableFields splits a table into the fields of each line, dropping the AGE cell of rows
// (not of the header), which depends on the time the test runs.
func tableFields(out string) [][]string {
	var rows [][]string
	for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Fields(l)
		if i > 0 && len(f) > 0 {
			f = f[:len(f)-1]
		}
		rows = append(rows, f)
	}
	return rows
}

func containsLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

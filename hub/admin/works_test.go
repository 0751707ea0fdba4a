package admin

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// decoded returns the manifests as generic objects, for comparing with what a test expects.
func decoded(t *testing.T, ms []workv1.Manifest) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(ms))
	for i, m := range ms {
		if err := json.Unmarshal(m.Raw, &out[i]); err != nil {
			t.Fatalf("manifest %d is not JSON: %v\n%s", i, err, m.Raw)
		}
	}
	return out
}

// obj parses a JSON object literal.
func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test object %s: %v", s, err)
	}
	return m
}

func TestParseManifests(t *testing.T) {
	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"default"}}`
	}
	cases := []struct {
		name  string
		input string
		want  []string // JSON of each manifest, in order
	}{
		{
			name: "multi-document YAML with a leading separator, comments and empty documents",
			input: `---
# the first
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: default
---
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: default}
`,
			want: []string{cm("a"), cm("b")},
		},
		{
			name:  "JSON stream",
			input: cm("a") + "\n" + cm("b") + "\n",
			want:  []string{cm("a"), cm("b")},
		},
		{
			name: "a v1 List is expanded into its items, in order",
			input: `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: default}
`,
			want: []string{cm("a"), cm("b"), cm("c")},
		},
		{
			name: "typed list items default to the list's apiVersion and kind",
			input: `apiVersion: v1
kind: ConfigMapList
items:
- metadata: {name: a, namespace: default}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}}
`,
			want: []string{cm("a"), cm("b")},
		},
		{
			name:  "an empty list gives no manifests",
			input: "apiVersion: v1\nkind: List\nitems: []\n",
		},
		{
			name:  "integers beyond float64 precision are kept exactly",
			input: `{"apiVersion":"example.com/v1","kind":"Big","metadata":{"name":"n"},"spec":{"n":9007199254740993}}`,
			want:  []string{`{"apiVersion":"example.com/v1","kind":"Big","metadata":{"name":"n"},"spec":{"n":9007199254740993}}`},
		},
		{
			name:  "cluster-scoped objects need no namespace",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n",
			want:  []string{`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"}}`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ParseManifests("in.yaml", strings.NewReader(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			var want []map[string]any
			for _, w := range tc.want {
				want = append(want, obj(t, w))
			}
			if got := decoded(t, ms); len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("manifests\n%v\nwant\n%v", got, want)
			}
			for i, m := range ms {
				if tc.name == "integers beyond float64 precision are kept exactly" && !bytes.Contains(m.Raw, []byte("9007199254740993")) {
					t.Errorf("manifest %d lost the integer's precision: %s", i, m.Raw)
				}
			}
		})
	}
}

func TestParseManifestsErrors(t *testing.T) {
	ok := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	cases := []struct {
		name, input, want string
	}{
		{"missing kind in the second document", ok + "---\napiVersion: v1\nmetadata: {name: b}\n",
			"deploy.yaml: document 2: missing kind"},
		{"missing apiVersion", "kind: ConfigMap\nmetadata: {name: b}\n",
			"deploy.yaml: document 1: missing apiVersion"},
		{"empty documents still count", "---\n# nothing\n---\n" + ok + "---\nkind: ConfigMap\n",
			"deploy.yaml: document 3: missing apiVersion"},
		{"kind not a string", "apiVersion: v1\nkind: 3\nmetadata: {name: b}\n",
			"deploy.yaml: document 1: kind is a number, not a string"},
		{"missing name", ok + "---\napiVersion: v1\nkind: Secret\nmetadata: {namespace: default}\n",
			"deploy.yaml: document 2: Secret: missing metadata.name"},
		{"missing metadata", "apiVersion: v1\nkind: Secret\n",
			"deploy.yaml: document 1: Secret: missing metadata.name"},
		{"generateName", "apiVersion: v1\nkind: Secret\nmetadata: {generateName: s-}\n",
			"deploy.yaml: document 1: Secret: metadata.generateName is not supported, set metadata.name"},
		{"metadata not an object", "apiVersion: v1\nkind: Secret\nmetadata: [a]\n",
			"deploy.yaml: document 1: Secret: metadata is a list, not an object"},
		{"a scalar document", ok + "---\njust text\n",
			"deploy.yaml: document 2: not a Kubernetes object but a string"},
		{"a list document", "- a\n- b\n",
			"deploy.yaml: document 1: not a Kubernetes object but a list"},
		{"a list item without kind", "apiVersion: v1\nkind: List\nitems:\n- " + `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}` + "\n- {apiVersion: v1, metadata: {name: b}}\n",
			"deploy.yaml: document 1: items[1]: missing kind"},
		{"items not a list", "apiVersion: v1\nkind: List\nitems: {a: b}\n",
			"deploy.yaml: document 1: List: items is an object, not a list"},
		{"a ManifestWork", ok + "---\napiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: w, namespace: cluster1}\n",
			"deploy.yaml: document 2: ManifestWork w is not a manifest to deploy"},
		{"a ManifestWork inside a List", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: work.open-cluster-management.io/v1, kind: ManifestWork, metadata: {name: w}}\n",
			"deploy.yaml: document 1: items[0]: ManifestWork w is not a manifest to deploy"},
		{"bad apiVersion", "apiVersion: a/b/c\nkind: X\nmetadata: {name: a}\n",
			`deploy.yaml: document 1: apiVersion "a/b/c"`},
		{"YAML syntax error", ok + "---\napiVersion: v1\nkind: [\n",
			"deploy.yaml: document 2: "},
		{"JSON syntax error", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n{\"kind\": ",
			"deploy.yaml: document 2: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ParseManifests("deploy.yaml", strings.NewReader(tc.input))
			if err == nil {
				t.Fatalf("no error, want %q; manifests %d", tc.want, len(ms))
			}
			t.Logf("error: %v", err)
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start with %q", err, tc.want)
			}
			if ms != nil {
				t.Errorf("manifests returned with the error: %d", len(ms))
			}
		})
	}
	// The ManifestWork refusal says what to do instead.
	_, err := ParseManifests("w.yaml", strings.NewReader("apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: w}\n"))
	if err == nil || !strings.Contains(err.Error(), "kubectl apply") {
		t.Errorf("error %v, want it to point at kubectl apply", err)
	}
	// Another group's kind named ManifestWork is a plain manifest.
	if _, err := ParseManifests("w.yaml", strings.NewReader("apiVersion: example.com/v1\nkind: ManifestWork\nmetadata: {name: w}\n")); err != nil {
		t.Errorf("example.com ManifestWork: %v", err)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func names(t *testing.T, ms []workv1.Manifest) []string {
	t.Helper()
	var out []string
	for _, m := range decoded(t, ms) {
		out = append(out, m["kind"].(string)+"/"+m["metadata"].(map[string]any)["name"].(string))
	}
	return out
}

func TestReadManifests(t *testing.T) {
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"b.yaml":          cm("b1") + "---\n" + cm("b2"),
		"a.json":          `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`,
		"c.yml":           cm("c"),
		"D.YAML":          cm("d"), // upper-case extension; sorts first
		"notes.txt":       "not a manifest",
		"x.yaml.orig":     cm("x"),
		"empty/none.txt":  "",
		"blank/zero.yaml": "# nothing here\n",
		"bad/1.yaml":      cm("ok"),
		"bad/2.yaml":      cm("ok2") + "---\nkind: ConfigMap\nmetadata: {name: x}\n",
	})

	// A file.
	file := filepath.Join(dir, "b.yaml")
	ms, err := ReadManifests(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, ms), []string{"ConfigMap/b1", "ConfigMap/b2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("file: %v, want %v", got, want)
	}

	// A directory: its manifest files in name order, nothing else.
	sub := t.TempDir()
	for _, n := range []string{"b.yaml", "a.json", "c.yml", "D.YAML", "notes.txt", "x.yaml.orig"} {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, sub, map[string]string{n: string(data)})
	}
	writeFiles(t, sub, map[string]string{"nested/e.yaml": cm("e")})
	ms, err = ReadManifests(sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, ms), []string{"ConfigMap/d", "Secret/a", "ConfigMap/b1", "ConfigMap/b2", "ConfigMap/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("directory: %v, want %v", got, want)
	}

	// Standard input.
	ms, err = ReadManifests("-", strings.NewReader(cm("in1")+"---\n"+cm("in2")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, ms), []string{"ConfigMap/in1", "ConfigMap/in2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stdin: %v, want %v", got, want)
	}

	for _, tc := range []struct {
		name, path string
		stdin      string
		want       []string // substrings of the error
	}{
		{"a file's error names it and the document", filepath.Join(dir, "bad", "2.yaml"), "",
			[]string{filepath.Join(dir, "bad", "2.yaml") + ": document 2: missing apiVersion"}},
		{"a directory's error names the file", filepath.Join(dir, "bad"), "",
			[]string{filepath.Join(dir, "bad", "2.yaml") + ": document 2: missing apiVersion"}},
		{"stdin errors name stdin", "-", cm("ok") + "---\napiVersion: v1\nmetadata: {name: x}\n",
			[]string{"stdin: document 2: missing kind"}},
		{"empty stdin", "-", "", []string{"stdin: no manifests"}},
		{"a file of comments", filepath.Join(dir, "blank", "zero.yaml"), "",
			[]string{filepath.Join(dir, "blank", "zero.yaml") + ": no manifests"}},
		{"a directory with only comments", filepath.Join(dir, "blank"), "",
			[]string{filepath.Join(dir, "blank") + ": no manifests"}},
		{"a directory without manifest files", filepath.Join(dir, "empty"), "",
			[]string{filepath.Join(dir, "empty") + ": no .yaml, .yml, .json files"}},
		{"a missing file", filepath.Join(dir, "single.yaml"), "",
			[]string{filepath.Join(dir, "single.yaml"), "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := ReadManifests(tc.path, strings.NewReader(tc.stdin))
			if err == nil {
				t.Fatalf("no error, want %q; manifests %v", tc.want, names(t, ms))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }
func boolp(v bool) *bool   { return &v }
func raw(s string) workv1.Manifest {
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(s)}}
}

func TestFormatFieldValue(t *testing.T) {
	for _, tc := range []struct {
		v    workv1.FieldValue
		want string
	}{
		{workv1.FieldValue{Type: workv1.Integer, Integer: i64(-3)}, "-3"},
		{workv1.FieldValue{Type: workv1.Boolean, Boolean: boolp(true)}, "true"},
		{workv1.FieldValue{Type: workv1.Boolean, Boolean: boolp(false)}, "false"},
		{workv1.FieldValue{Type: workv1.String, String: str("quay.io/x:1")}, "quay.io/x:1"},
		{workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: str(`{"a":[1,2]}`)}, `{"a":[1,2]}`},
		{workv1.FieldValue{Type: workv1.Integer}, "<Integer value missing>"},
		{workv1.FieldValue{Type: workv1.String, Integer: i64(1)}, "<String value missing>"},
	} {
		if got := FormatFieldValue(tc.v); got != tc.want {
			t.Errorf("FormatFieldValue(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func testWork(ns, name string, created time.Time, manifests ...workv1.Manifest) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}}
	w.Spec.Workload.Manifests = manifests
	return w
}

func TestWorkTable(t *testing.T) {
	deploy := raw(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"hello","namespace":"default"}}`)
	w1 := testWork("cluster1", "hello", now.Add(-90*time.Second), deploy, deploy)
	w1.Status.Conditions = []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionFalse},
		{Type: workv1.WorkProgressing, Status: metav1.ConditionTrue},
	}
	w2 := testWork("cluster2", "new", now.Add(-3*time.Hour), deploy)
	r1, r2 := WorkRowOf(w1), WorkRowOf(w2)
	if want := (WorkRow{Cluster: "cluster1", Name: "hello", Manifests: 2, Applied: "True", Available: "False", Created: w1.CreationTimestamp.Time}); r1 != want {
		t.Errorf("row %+v, want %+v", r1, want)
	}
	if r2.Applied != "" || r2.Available != "" || r2.Manifests != 1 {
		t.Errorf("row of an unreported work %+v, want empty Applied/Available and 1 manifest", r2)
	}

	var buf bytes.Buffer
	if err := WriteWorks(&buf, []WorkRow{r1, r2}, false, now); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"}, {"hello", "2", "True", "False", "90s"}, {"new", "1", "-", "-", "3h"}}
	if got := fields(buf.String()); !reflect.DeepEqual(got, want) {
		t.Errorf("table\n%s\nfields %q, want %q", buf.String(), got, want)
	}
	buf.Reset()
	if err := WriteWorks(&buf, []WorkRow{r1, r2}, true, now); err != nil {
		t.Fatal(err)
	}
	want = [][]string{{"CLUSTER", "NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"},
		{"cluster1", "hello", "2", "True", "False", "90s"}, {"cluster2", "new", "1", "-", "-", "3h"}}
	if got := fields(buf.String()); !reflect.DeepEqual(got, want) {
		t.Errorf("table with clusters\n%s\nfields %q, want %q", buf.String(), got, want)
	}
	// Columns are aligned: every row's APPLIED starts where the header's does.
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	col := strings.Index(lines[0], "APPLIED")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("row %q is not aligned with the header %q", l, lines[0])
		}
	}
}

// fields splits a table into lines of whitespace-separated fields.
func fields(s string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}

func TestWorkDetail(t *testing.T) {
	w := testWork("cluster1", "hello-work-demo", now.Add(-5*time.Minute),
		raw(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"hello","namespace":"default"}}`),
		raw(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"}}`),
		raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"demo"}}`),
	)
	w.Status.Conditions = []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: workv1.WorkAppliedReasonComplete, Message: "Apply manifest work complete"},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionFalse, Reason: workv1.WorkAvailableReasonNotAvailable, Message: "1 of 3\nresources are not available"},
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{
			// Reported out of order: matched by ordinal.
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 1, Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: "demo"},
			Conditions:   []metav1.Condition{{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete"}},
		},
		{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 0, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Name: "hello", Namespace: "default"},
			Conditions: []metav1.Condition{
				{Type: workv1.ManifestApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestComplete", Message: "Apply manifest complete"},
				{Type: workv1.ManifestStatusFeedbackSynced, Status: metav1.ConditionTrue, Reason: "StatusFeedbackSynced"},
			},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				{Name: "replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: i64(3)}},
				{Name: "image", Value: workv1.FieldValue{Type: workv1.String, String: str("quay.io/asmacdo/busybox")}},
				{Name: "paused", Value: workv1.FieldValue{Type: workv1.Boolean, Boolean: boolp(false)}},
				{Name: "selector", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: str(`{"app":"hello"}`)}},
				{Name: "note", Value: workv1.FieldValue{Type: workv1.String, String: str("two\tlines\n")}},
			}},
		},
		{
			// An ordinal the spec no longer has (the agent has not caught up with a replace).
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 5, Version: "v1", Kind: "Secret", Name: "old", Namespace: "default"},
		},
	}
	d := DetailOf(w)
	if len(d.Manifests) != 4 {
		t.Fatalf("detail has %d manifests, want 4: %+v", len(d.Manifests), d.Manifests)
	}
	m0 := d.Manifests[0]
	if m0.Ordinal != 0 || m0.Kind != "Deployment" || m0.Name != "hello" || m0.Namespace != "default" || m0.APIVersion != "apps/v1" ||
		!m0.Reported || len(m0.Conditions) != 2 || len(m0.Feedback) != 5 {
		t.Errorf("manifest 0: %+v", m0)
	}
	if m2 := d.Manifests[2]; m2.Reported || m2.Kind != "ConfigMap" {
		t.Errorf("manifest 2 %+v, want an unreported ConfigMap", m2)
	}
	if m5 := d.Manifests[3]; m5.Ordinal != 5 || m5.Kind != "Secret" || m5.APIVersion != "v1" || !m5.Reported {
		t.Errorf("stale manifest %+v, want the reported Secret at ordinal 5", m5)
	}

	var buf bytes.Buffer
	if err := WriteWorkDetail(&buf, d, now); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Logf("detail:\n%s", out)
	for _, want := range []string{
		"Name:     hello-work-demo\n",
		"Cluster:  cluster1\n",
		"Age:      5m\n",
		"Conditions:\n  TYPE       STATUS  REASON                       MESSAGE\n",
		"  Applied    True    AppliedManifestWorkComplete  Apply manifest work complete\n",
		"  Available  False   ResourcesNotAvailable        1 of 3 resources are not available\n",
		"Manifests: 4\n",
		"  [0] Deployment default/hello (apps/v1)\n    Conditions:\n",
		"      Applied               True    AppliedManifestComplete  Apply manifest complete\n",
		"      StatusFeedbackSynced  True    StatusFeedbackSynced     -\n",
		"    Feedback:\n      replicas=3\n      image=quay.io/asmacdo/busybox\n      paused=false\n      selector={\"app\":\"hello\"}\n      note=\"two\\tlines\\n\"\n",
		"  [1] Namespace demo (v1)\n    Conditions:\n",
		"    Feedback: none\n",
		"  [2] ConfigMap demo/cm (v1)\n    Status: not reported yet\n",
		"  [5] Secret default/old (v1)\n    Conditions: none\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("detail does not contain %q", want)
		}
	}

	// A work nobody reported on yet says so.
	buf.Reset()
	if err := WriteWorkDetail(&buf, DetailOf(testWork("c", "w", time.Time{}, raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`))), now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Age:      -\n", "Conditions: none reported yet", "  [0] ConfigMap cm (v1)\n    Status: not reported yet\n"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("detail of an unreported work does not contain %q:\n%s", want, buf.String())
		}
	}
}

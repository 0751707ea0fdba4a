package admin

// The hub admin's work operations behind `flotilla create work` and `flotilla get works`:
// reading manifests from files, creating or replacing a ManifestWork in cluster namespaces,
// and tabulating works with their status and feedback.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

const (
	// StdinPath is the path for which ReadManifests reads its stdin argument.
	StdinPath = "-"
	// StdinSource is how errors name that input.
	StdinSource = "stdin"
)

// ManifestExtensions are the file name extensions ReadManifests picks up in a directory.
var ManifestExtensions = []string{".yaml", ".yml", ".json"}

// ReadManifests reads Kubernetes manifests from path: a YAML or JSON file, every file of a
// directory whose name ends in one of ManifestExtensions (in name order, not recursing into
// subdirectories), or stdin when path is StdinPath. See ParseManifests for the format; the
// manifests are returned in file order. At least one manifest must be found.
func ReadManifests(path string, stdin io.Reader) ([]workv1.Manifest, error) {
	if path == "" {
		return nil, errors.New("no manifest file given")
	}
	if path == StdinPath {
		if stdin == nil {
			return nil, fmt.Errorf("%s: no standard input", StdinSource)
		}
		return nonEmpty(StdinSource)(ParseManifests(StdinSource, stdin))
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return nonEmpty(path)(ParseManifests(path, f))
	}
	entries, err := os.ReadDir(path) // sorted by file name
	if err != nil {
		return nil, err
	}
	var out []workv1.Manifest
	found := false
	for _, e := range entries {
		if e.IsDir() || !hasManifestExtension(e.Name()) {
			continue
		}
		found = true
		file := filepath.Join(path, e.Name())
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		ms, err := ParseManifests(file, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	if !found {
		return nil, fmt.Errorf("%s: no %s files in the directory", path, strings.Join(ManifestExtensions, ", "))
	}
	return nonEmpty(path)(out, nil)
}

func hasManifestExtension(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range ManifestExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

func nonEmpty(source string) func([]workv1.Manifest, error) ([]workv1.Manifest, error) {
	return func(ms []workv1.Manifest, err error) ([]workv1.Manifest, error) {
		if err == nil && len(ms) == 0 {
			return nil, fmt.Errorf("%s: no manifests", source)
		}
		return ms, err
	}
}

// ParseManifests parses the Kubernetes objects in r, named source in errors: a stream of
// YAML documents separated by "---" lines, or of JSON objects. Empty documents are skipped;
// an object whose kind ends in "List" and that has items (List, ConfigMapList, ...) is
// replaced by its items, whose apiVersion and kind default to the list's for typed lists.
// Every object needs apiVersion, kind and metadata.name, and may not be a ManifestWork.
// Errors name the source and the document, counted from 1, e.g.
// "deploy.yaml: document 2: missing kind".
func ParseManifests(source string, r io.Reader) ([]workv1.Manifest, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []workv1.Manifest
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber() // keeps integers exact when the object is encoded again
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		ms, err := manifestsOf(v, "", nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		out = append(out, ms...)
	}
}

// manifestsOf checks one decoded object (at path within its document, "" for the document
// itself) and returns it as a manifest, or its items when it is a list. defaults holds the
// apiVersion and kind of a typed list's items.
func manifestsOf(v any, path string, defaults map[string]string) ([]workv1.Manifest, error) {
	at := func(err error) error {
		if path == "" {
			return err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, at(fmt.Errorf("not a Kubernetes object but %s", article(jsonKind(v))))
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if _, set := obj[f]; !set && defaults[f] != "" {
			obj[f] = defaults[f]
		}
	}
	apiVersion, err := stringField(obj, "apiVersion")
	if err != nil {
		return nil, at(err)
	}
	kind, err := stringField(obj, "kind")
	if err != nil {
		return nil, at(err)
	}
	if items, isList := obj["items"]; isList && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok && items != nil {
			return nil, at(fmt.Errorf("%s: items is %s, not a list", kind, article(jsonKind(items))))
		}
		var itemDefaults map[string]string
		if kind != "List" {
			itemDefaults = map[string]string{"apiVersion": apiVersion, "kind": strings.TrimSuffix(kind, "List")}
		}
		var out []workv1.Manifest
		for i, item := range list {
			ms, err := manifestsOf(item, fmt.Sprintf("%sitems[%d]", prefix(path), i), itemDefaults)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
		return out, nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, at(fmt.Errorf("apiVersion %q: %w", apiVersion, err))
	}
	md, ok := obj["metadata"].(map[string]any)
	if gv.Group == workv1.GroupVersion.Group && kind == "ManifestWork" {
		name, _ := md["name"].(string)
		return nil, at(fmt.Errorf("ManifestWork %s is not a manifest to deploy: create work wraps plain Kubernetes "+
			"manifests into a ManifestWork of its own; apply a ManifestWork with kubectl apply -f instead, "+
			"or put the manifests of its spec.workload.manifests in the file", name))
	}
	if _, set := obj["metadata"]; set && !ok {
		return nil, at(fmt.Errorf("%s: metadata is %s, not an object", kind, article(jsonKind(obj["metadata"]))))
	}
	if _, err := stringField(md, "name"); err != nil {
		if md["generateName"] != nil {
			return nil, at(fmt.Errorf("%s: metadata.generateName is not supported, set metadata.name", kind))
		}
		return nil, at(fmt.Errorf("%s: %w", kind, prefixField("metadata.", err)))
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, at(err)
	}
	return []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}, nil
}

func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + "."
}

// fieldError is a missing, empty or mistyped field.
type fieldError struct {
	field, problem string
}

func (e fieldError) Error() string {
	if e.problem == "missing" || e.problem == "empty" {
		return e.problem + " " + e.field
	}
	return e.field + " is " + article(e.problem) + ", not a string"
}

func prefixField(p string, err error) error {
	var fe fieldError
	if errors.As(err, &fe) {
		fe.field = p + fe.field
		return fe
	}
	return err
}

// stringField returns the non-empty string obj[f], failing when it is missing, empty or not
// a string.
func stringField(obj map[string]any, f string) (string, error) {
	v, ok := obj[f]
	if !ok || v == nil {
		return "", fieldError{field: f, problem: "missing"}
	}
	s, ok := v.(string)
	if !ok {
		return "", fieldError{field: f, problem: jsonKind(v)}
	}
	if s == "" {
		return "", fieldError{field: f, problem: "empty"}
	}
	return s, nil
}

// article prefixes a JSON kind with its indefinite article.
func article(kind string) string {
	if strings.IndexAny(kind, "aeiou") == 0 {
		return "an " + kind
	}
	return "a " + kind
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// WorkResult says what CreateWork did in one cluster.
type WorkResult struct {
	Cluster string
	// Updated is true when an existing ManifestWork's manifests were replaced.
	Updated bool
}

// CreateWork creates the ManifestWork name with manifests (in that order) in the namespace of
// each cluster on the hub. Before anything is written it checks that every cluster has a
// ManagedCluster and a namespace on the hub (it is accepted), and that no ManifestWork of
// that name exists unless replace is set; then an existing ManifestWork gets its
// spec.workload.manifests replaced, every other field kept. Every cluster is attempted; the
// error joins the failures, each naming its cluster.
func CreateWork(ctx context.Context, c client.Client, name string, clusters []string, manifests []workv1.Manifest, replace bool) ([]WorkResult, error) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("invalid ManifestWork name %q: %s", name, strings.Join(errs, "; "))
	}
	if len(manifests) == 0 {
		return nil, errors.New("no manifests")
	}
	clusters, err := uniqueClusters(clusters)
	if err != nil {
		return nil, err
	}
	var unknown, notAccepted, exists []string
	existing := map[string]*workv1.ManifestWork{}
	for _, cluster := range clusters {
		mc := &clusterv1.ManagedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
			if apierrors.IsNotFound(err) {
				unknown = append(unknown, cluster)
				continue
			}
			return nil, fmt.Errorf("cluster %q: reading ManagedCluster: %w", cluster, err)
		}
		if !mc.DeletionTimestamp.IsZero() {
			return nil, fmt.Errorf("cluster %q: ManagedCluster is being deleted; no ManifestWork was written", cluster)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, &corev1.Namespace{}); err != nil {
			if apierrors.IsNotFound(err) {
				notAccepted = append(notAccepted, cluster)
				continue
			}
			return nil, fmt.Errorf("cluster %q: reading its namespace: %w", cluster, err)
		}
		w := &workv1.ManifestWork{}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); {
		case err == nil && !w.DeletionTimestamp.IsZero():
			return nil, fmt.Errorf("cluster %q: ManifestWork %s is being deleted; create it again once it is gone", cluster, name)
		case err == nil:
			existing[cluster] = w
			exists = append(exists, cluster)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("cluster %q: reading ManifestWork %s: %w", cluster, name, err)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown %s %s: no ManagedCluster of that name on the hub; no ManifestWork was written",
			plural(len(unknown), "cluster", "clusters"), strings.Join(unknown, ", "))
	}
	if len(notAccepted) > 0 {
		return nil, fmt.Errorf("%s %s %s not accepted yet: no cluster namespace on the hub (flotilla accept --clusters %s); no ManifestWork was written",
			plural(len(notAccepted), "cluster", "clusters"), strings.Join(notAccepted, ", "), plural(len(notAccepted), "is", "are"),
			strings.Join(notAccepted, ","))
	}
	if len(exists) > 0 && !replace {
		return nil, fmt.Errorf("manifestwork %s already exists in %s %s (--replace replaces its manifests); no ManifestWork was written",
			name, plural(len(exists), "cluster", "clusters"), strings.Join(exists, ", "))
	}

	var results []WorkResult
	var errs []error
	for _, cluster := range clusters {
		updated, err := createOrReplace(ctx, c, cluster, name, manifests, existing[cluster] != nil, replace)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %q: %w", cluster, err))
			continue
		}
		results = append(results, WorkResult{Cluster: cluster, Updated: updated})
	}
	return results, errors.Join(errs...)
}

func createOrReplace(ctx context.Context, c client.Client, cluster, name string, manifests []workv1.Manifest, exists, replace bool) (updated bool, err error) {
	if !exists {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: name}}
		w.Spec.Workload.Manifests = manifests
		err := c.Create(ctx, w)
		if err == nil {
			return false, nil
		}
		if !apierrors.IsAlreadyExists(err) || !replace {
			return false, fmt.Errorf("creating ManifestWork %s: %w", name, err)
		}
		// Created meanwhile by someone else: replace its manifests like any existing work.
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1.ManifestWork{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
			return err
		}
		w.Spec.Workload.Manifests = manifests
		return c.Update(ctx, w)
	})
	if err != nil {
		return false, fmt.Errorf("replacing the manifests of ManifestWork %s: %w", name, err)
	}
	return true, nil
}

func uniqueClusters(clusters []string) ([]string, error) {
	return unique(clusters, "cluster name", "clusters")
}

// unique returns names trimmed, without repeats, in order; an empty name or none at all is an
// error naming what was expected (what: "cluster name", plural: "clusters").
func unique(names []string, what, plural string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, errors.New("empty " + what)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no " + plural + " given")
	}
	return out, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WorkRow is one line of `flotilla get works`.
type WorkRow struct {
	Cluster, Name string
	Manifests     int
	// Applied and Available are the statuses of the work's conditions, "" when not reported.
	Applied, Available string
	Created            time.Time
}

// WorkHeader is the header of the works table; the table of every cluster's works starts
// with a further CLUSTER column.
var WorkHeader = []string{"NAME", "MANIFESTS", "APPLIED", "AVAILABLE", "AGE"}

// WorkRows lists the ManifestWorks of cluster, or of every namespace when cluster is "",
// sorted by cluster and name. A cluster that has no works and no ManagedCluster is an error,
// to catch misspelt names.
func WorkRows(ctx context.Context, c client.Client, cluster string) ([]WorkRow, error) {
	list := &workv1.ManifestWorkList{}
	var opts []client.ListOption
	if cluster != "" {
		opts = append(opts, client.InNamespace(cluster))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing ManifestWorks: %w", err)
	}
	if cluster != "" && len(list.Items) == 0 {
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, &clusterv1.ManagedCluster{}); apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("unknown cluster %s: no ManagedCluster of that name on the hub", cluster)
		}
	}
	rows := make([]WorkRow, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, WorkRowOf(&list.Items[i]))
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Cluster != rows[j].Cluster {
			return rows[i].Cluster < rows[j].Cluster
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

// WorkRowOf tabulates one ManifestWork; its namespace is its cluster.
func WorkRowOf(w *workv1.ManifestWork) WorkRow {
	cond := func(t string) string {
		if c := meta.FindStatusCondition(w.Status.Conditions, t); c != nil {
			return string(c.Status)
		}
		return ""
	}
	return WorkRow{
		Cluster:   w.Namespace,
		Name:      w.Name,
		Manifests: len(w.Spec.Workload.Manifests),
		Applied:   cond(workv1.WorkApplied),
		Available: cond(workv1.WorkAvailable),
		Created:   w.CreationTimestamp.Time,
	}
}

// WriteWorks prints rows as an aligned table, with a leading CLUSTER column when
// withCluster is set; ages are relative to now.
func WriteWorks(w io.Writer, rows []WorkRow, withCluster bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	header := WorkHeader
	if withCluster {
		header = append([]string{"CLUSTER"}, header...)
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := []string{r.Name, strconv.Itoa(r.Manifests), dash(r.Applied), dash(r.Available), age(r.Created, now)}
		if withCluster {
			cells = append([]string{r.Cluster}, cells...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func age(created, now time.Time) string {
	if created.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(created))
}

// WorkDetail is what `flotilla get works NAME --cluster C` shows.
type WorkDetail struct {
	Cluster, Name string
	Created       time.Time
	// Conditions are the work's conditions as the work agent reported them.
	Conditions []metav1.Condition
	// Manifests are the manifests of the spec in order, followed by any the status
	// reports at an ordinal the spec no longer has.
	Manifests []ManifestDetail
}

// ManifestDetail is one manifest of a work with its reported status.
type ManifestDetail struct {
	Ordinal                           int32
	APIVersion, Kind, Namespace, Name string
	// Reported is true when the status has an entry for this manifest.
	Reported   bool
	Conditions []metav1.Condition
	Feedback   []workv1.FeedbackValue
}

// GetWorkDetail reads the ManifestWork name of cluster.
func GetWorkDetail(ctx context.Context, c client.Client, cluster, name string) (WorkDetail, error) {
	w := &workv1.ManifestWork{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: name}, w); err != nil {
		if apierrors.IsNotFound(err) {
			return WorkDetail{}, fmt.Errorf("manifestwork %s not found in cluster %s", name, cluster)
		}
		return WorkDetail{}, fmt.Errorf("reading ManifestWork %s/%s: %w", cluster, name, err)
	}
	return DetailOf(w), nil
}

// DetailOf describes one ManifestWork: each manifest of its spec, identified from the
// manifest itself, with the conditions and feedback values its status reports at the same
// ordinal.
func DetailOf(w *workv1.ManifestWork) WorkDetail {
	d := WorkDetail{Cluster: w.Namespace, Name: w.Name, Created: w.CreationTimestamp.Time, Conditions: w.Status.Conditions}
	status := map[int32]*workv1.ManifestCondition{}
	for i := range w.Status.ResourceStatus.Manifests {
		m := &w.Status.ResourceStatus.Manifests[i]
		status[m.ResourceMeta.Ordinal] = m
	}
	for i, m := range w.Spec.Workload.Manifests {
		md := ManifestDetail{Ordinal: int32(i)}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(m.Raw, &head); err == nil {
			md.APIVersion, md.Kind, md.Name, md.Namespace = head.APIVersion, head.Kind, head.Metadata.Name, head.Metadata.Namespace
		}
		if s := status[md.Ordinal]; s != nil {
			md.Reported, md.Conditions, md.Feedback = true, s.Conditions, s.StatusFeedbacks.Values
			delete(status, md.Ordinal)
		}
		d.Manifests = append(d.Manifests, md)
	}
	var stale []ManifestDetail
	for _, s := range status {
		rm := s.ResourceMeta
		stale = append(stale, ManifestDetail{
			Ordinal: rm.Ordinal, APIVersion: schema.GroupVersion{Group: rm.Group, Version: rm.Version}.String(),
			Kind: rm.Kind, Name: rm.Name, Namespace: rm.Namespace,
			Reported: true, Conditions: s.Conditions, Feedback: s.StatusFeedbacks.Values,
		})
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].Ordinal < stale[j].Ordinal })
	d.Manifests = append(d.Manifests, stale...)
	return d
}

// FormatFieldValue prints a feedback value as its type reads naturally: 3, true, some
// text, {"raw":"json"}.
func FormatFieldValue(v workv1.FieldValue) string {
	switch {
	case v.Type == workv1.Integer && v.Integer != nil:
		return strconv.FormatInt(*v.Integer, 10)
	case v.Type == workv1.Boolean && v.Boolean != nil:
		return strconv.FormatBool(*v.Boolean)
	case v.Type == workv1.String && v.String != nil:
		return *v.String
	case v.Type == workv1.JsonRaw && v.JsonRaw != nil:
		return *v.JsonRaw
	}
	return fmt.Sprintf("<%s value missing>", v.Type)
}

// WriteWorkDetail prints d: the work's conditions, then each manifest with its conditions
// and feedback values (name=value). Ages are relative to now.
func WriteWorkDetail(w io.Writer, d WorkDetail, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "Cluster:\t%s\n", d.Cluster)
	fmt.Fprintf(tw, "Age:\t%s\n", age(d.Created, now))
	if len(d.Conditions) == 0 {
		fmt.Fprintln(tw, "Conditions: none reported yet (has the cluster's work agent synced this work?)")
	} else {
		fmt.Fprintln(tw, "Conditions:")
		writeConditions(tw, "  ", d.Conditions)
	}
	fmt.Fprintf(tw, "Manifests: %d\n", len(d.Manifests))
	for _, m := range d.Manifests {
		id := m.Name
		if m.Namespace != "" {
			id = m.Namespace + "/" + m.Name
		}
		fmt.Fprintf(tw, "  [%d] %s %s (%s)\n", m.Ordinal, dash(m.Kind), dash(id), dash(m.APIVersion))
		if !m.Reported {
			fmt.Fprintln(tw, "    Status: not reported yet")
			continue
		}
		if len(m.Conditions) == 0 {
			fmt.Fprintln(tw, "    Conditions: none")
		} else {
			fmt.Fprintln(tw, "    Conditions:")
			writeConditions(tw, "      ", m.Conditions)
		}
		if len(m.Feedback) == 0 {
			fmt.Fprintln(tw, "    Feedback: none")
			continue
		}
		fmt.Fprintln(tw, "    Feedback:")
		for _, f := range m.Feedback {
			v := FormatFieldValue(f.Value)
			if strings.ContainsAny(v, "\t\n\r") {
				v = strconv.Quote(v)
			}
			fmt.Fprintf(tw, "      %s=%s\n", f.Name, v)
		}
	}
	return tw.Flush()
}

func writeConditions(tw io.Writer, indent string, conds []metav1.Condition) {
	fmt.Fprintf(tw, "%sTYPE\tSTATUS\tREASON\tMESSAGE\n", indent)
	for _, c := range conds {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, c.Type, c.Status, dash(c.Reason), dash(oneLine(c.Message)))
	}
}

// oneLine keeps a message on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

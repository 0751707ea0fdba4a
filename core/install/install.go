// Package install renders Flotilla's Helm charts (charts/, embedded in the binary) into
// Kubernetes objects with Helm's Go library, and applies or deletes them. The charts are the
// single source of the install manifests: `helm install` takes them from the repository,
// `flotilla init` and `flotilla join` render them here, so both install the same objects.
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/charts"
)

// Chart names.
const (
	HubChart        = "flotilla-hub"
	KlusterletChart = "flotilla-klusterlet"
)

// Default release namespaces: the hub's, and the klusterlet's agent namespace.
const (
	HubNamespace   = "open-cluster-management-hub"
	AgentNamespace = "open-cluster-management-agent"
)

// PartOfLabel, set to PartOf, marks the release Namespace Render adds.
const (
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOf      = "flotilla"
)

// HubChartOwnedFlags are the `flotilla hub` flags the hub chart sets from its other values
// (webhook Service, probe and metrics ports, leader election) or leaves unset on purpose
// (kubeconfig: in-cluster; webhook-host: the Service replaces it; components: its one
// Deployment runs them all; webhook-configuration-name, webhook-secret-name: named per
// component in topology Split; cluster-manager-name: deprecated and ignored, the operator
// follows the ClusterManager; dashboard: from dashboard.enabled). Every other flag is a key of
// the values' flags.
var HubChartOwnedFlags = []string{
	"kubeconfig", "leader-elect", "metrics-bind-address", "health-probe-bind-address",
	"webhook-bind-address", "webhook-service", "webhook-host", "cluster-manager-name",
	"addons", "addons-install-all", "cluster-proxy-server-count", "cluster-proxy-bind-address", "components",
	"webhook-configuration-name", "webhook-secret-name", "dashboard",
}

// KlusterletChartOwnedFlags are the `flotilla klusterlet` flags the klusterlet chart sets
// from its other values (agent namespace, probe and metrics ports, leader election,
// the work agent's ServiceAccount, --work-only by the deploy mode, hosted mode's
// managed kubeconfig), takes from the Klusterlet's spec through specFlags (the klusterlet
// operator's ValuesFor), or leaves
// unset on purpose (kubeconfig: in-cluster; bootstrap-kubeconfig: the Secret
// bootstrap-hub-kubeconfig). Every other flag is a key of the values' flags; klusterlet-name is deprecated and ignored.
var KlusterletChartOwnedFlags = []string{
	"kubeconfig", "bootstrap-kubeconfig", "klusterlet-name", "leader-elect", "leader-elect-namespace",
	"metrics-bind-address", "health-probe-bind-address", "agent-namespace",
	"work-service-account", "work-only", "managed-kubeconfig", "managed-kubeconfig-secret",
	// From the Klusterlet's spec (specFlags).
	"cluster-annotations", "cluster-labels", "external-server-urls", "hosting-cluster-claim",
	"hub-host-alias", "kube-api-qps", "kube-api-burst", "work-kube-api-qps", "work-kube-api-burst",
	"hub-kube-api-qps", "hub-kube-api-burst", "reserved-cluster-claim-suffixes",
}

// Load returns the embedded chart.
func Load(name string) (*chart.Chart, error) {
	files, err := chartFiles(name)
	if err != nil {
		return nil, err
	}
	buffered := make([]*loader.BufferedFile, 0, len(files))
	for _, f := range files {
		buffered = append(buffered, &loader.BufferedFile{Name: f.name, Data: f.data})
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", name, err)
	}
	return c, nil
}

type chartFile struct {
	name string // slash-separated, relative to the chart's directory
	data []byte
}

// chartFiles reads the embedded files of chart name.
func chartFiles(name string) ([]chartFile, error) {
	if name != HubChart && name != KlusterletChart {
		return nil, fmt.Errorf("no chart %q (charts: %s, %s)", name, HubChart, KlusterletChart)
	}
	var files []chartFile
	err := fs.WalkDir(charts.FS, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := charts.FS.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, chartFile{name: strings.TrimPrefix(p, name+"/"), data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading embedded chart %s: %w", name, err)
	}
	return files, nil
}

// Render renders chart name as release `release` in namespace with values (merged over the
// chart's values.yaml, validated against values.schema.json: an invalid value is an error
// naming the value's path). It returns the Namespace of the release first (labelled
// PartOfLabel=PartOf), then the chart's CRDs, then the templates' objects in Helm's install
// order (releaseutil.InstallOrder), each namespaced object defaulted to namespace. Objects
// are *unstructured.Unstructured.
func Render(name, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	if namespace == "" {
		return nil, fmt.Errorf("rendering chart %s: a namespace is required", name)
	}
	if err := chartutil.ValidateReleaseName(release); err != nil {
		return nil, fmt.Errorf("rendering chart %s: release %q: %w", name, release, err)
	}
	c, err := Load(name)
	if err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(c, values, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", name, err)
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", name, err)
	}
	for f := range files {
		if strings.HasSuffix(f, "NOTES.txt") {
			delete(files, f)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", name, err)
	}
	if len(hooks) > 0 {
		// Apply has no hook phases; a hook would silently be applied as a plain object.
		return nil, fmt.Errorf("chart %s: hooks are not supported (%s)", name, hooks[0].Path)
	}

	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	// A label gives the apply a field to own: an object applied with none gets managedFields
	// only on the next apply, which then is no no-op.
	ns.SetLabels(map[string]string{PartOfLabel: PartOf})
	objs := []*unstructured.Unstructured{ns}

	clusterScoped := maps.Clone(builtinClusterScoped)
	crdFiles := c.CRDObjects()
	slices.SortFunc(crdFiles, func(a, b chart.CRD) int { return strings.Compare(a.Filename, b.Filename) })
	for _, f := range crdFiles {
		docs, err := decode(f.File.Data)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", name, f.Filename, err)
		}
		for _, crd := range docs {
			if scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope"); scope == "Cluster" {
				group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
				clusterScoped[schema.GroupKind{Group: group, Kind: kind}] = true
			}
			objs = append(objs, crd)
		}
	}

	for _, m := range manifests {
		docs, err := decode([]byte(m.Content))
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", name, m.Name, err)
		}
		for _, o := range docs {
			if !clusterScoped[o.GroupVersionKind().GroupKind()] && o.GetNamespace() == "" {
				o.SetNamespace(namespace)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// builtinClusterScoped are the cluster-scoped kinds Kubernetes serves; with the charts' CRDs
// they tell Render which objects get the release namespace, without asking a server.
var builtinClusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
}

// decode parses a multi-document YAML stream, skipping empty documents.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		o := &unstructured.Unstructured{Object: m}
		if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("a document without apiVersion, kind or metadata.name: %v", m)
		}
		out = append(out, o)
	}
}

// WriteYAML writes objects as a multi-document YAML stream (---).
func WriteYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", describe(o), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}

// describe names an object in errors: kind namespace/name, or kind name.
func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// Lint runs Helm's linter on the embedded chart with values and returns its messages of
// severity warning or above as an error.
func Lint(name string, values map[string]any) error {
	files, err := chartFiles(name)
	if err != nil {
		return err
	}
	// Helm's linter reads a chart directory.
	tmp, err := os.MkdirTemp("", "flotilla-lint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, name)
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
	}
	ns := HubNamespace
	if name == KlusterletChart {
		ns = AgentNamespace
	}
	linter := lint.AllWithKubeVersion(dir, values, ns, nil)
	var msgs []string
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			msgs = append(msgs, strings.Replace(m.Error(), dir+string(filepath.Separator), "", 1))
		}
	}
	if len(msgs) > 0 {
		slices.Sort(msgs)
		return fmt.Errorf("helm lint %s:\n%s", name, strings.Join(msgs, "\n"))
	}
	return nil
}

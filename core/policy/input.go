package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
)

// InputOptions supply what the admission request does not carry.
type InputOptions struct {
	// IsClusterNamespace says whether a namespace belongs to a ManagedCluster (one of that name
	// exists); nil means none does.
	IsClusterNamespace func(namespace string) bool
	// FeatureGates are the hub's work feature gates, as input.featureGates.
	FeatureGates map[string]bool
}

// Input is an input document, parsed once for every policy of a request.
type Input struct {
	// Doc is the document (policies/README.md states its fields).
	Doc   map[string]any
	value ast.Value
}

// Value is the document as OPA's value.
func (in *Input) Value() (ast.Value, error) {
	if in.value == nil {
		v, err := ast.InterfaceToValue(in.Doc)
		if err != nil {
			return nil, err
		}
		in.value = v
	}
	return in.value, nil
}

// Executor is input.executor.
type Executor struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Username  string `json:"username"`
}

// ManifestSummary is one entry of input.manifests.
type ManifestSummary struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// NewInput builds the input document of an admission request.
func NewInput(req *admissionv1.AdmissionRequest, opts InputOptions) (*Input, error) {
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return nil, fmt.Errorf("request %s: object: %w", req.UID, err)
	}
	old, err := decodeObject(req.OldObject.Raw)
	if err != nil {
		return nil, fmt.Errorf("request %s: oldObject: %w", req.UID, err)
	}
	extra := map[string]any{}
	for k, v := range req.UserInfo.Extra {
		extra[k] = stringsToAny(v)
	}
	gates := map[string]any{}
	for k, v := range opts.FeatureGates {
		gates[k] = v
	}
	dryRun := req.DryRun != nil && *req.DryRun
	doc := map[string]any{
		"operation": string(req.Operation),
		"user": map[string]any{
			"username": req.UserInfo.Username,
			"uid":      req.UserInfo.UID,
			"groups":   stringsToAny(req.UserInfo.Groups),
			"extra":    extra,
		},
		"resource": map[string]any{
			"group": req.Resource.Group, "version": req.Resource.Version,
			"resource": req.Resource.Resource, "subresource": req.SubResource,
		},
		"kind":             map[string]any{"group": req.Kind.Group, "version": req.Kind.Version, "kind": req.Kind.Kind},
		"name":             req.Name,
		"namespace":        req.Namespace,
		"object":           obj,
		"oldObject":        old,
		"dryRun":           dryRun,
		"clusterNamespace": clusterNamespace(req, opts.IsClusterNamespace),
		"featureGates":     gates,
	}
	if req.Resource.Group == "work.open-cluster-management.io" {
		var spec func(map[string]any) map[string]any
		switch req.Resource.Resource {
		case "manifestworks":
			spec = func(o map[string]any) map[string]any { return childMap(o, "spec") }
		case "manifestworkreplicasets":
			spec = func(o map[string]any) map[string]any { return childMap(childMap(o, "spec"), "manifestWorkTemplate") }
		}
		if spec != nil {
			doc["executor"] = executorOf(spec(obj))
			doc["oldExecutor"] = executorOf(spec(old))
			doc["manifests"] = manifestsOf(spec(obj))
		}
	}
	return &Input{Doc: doc}, nil
}

// decodeObject decodes raw JSON into a map, numbers kept exact; empty means null.
func decodeObject(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

func stringsToAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// clusterNamespace is the ManagedCluster a request concerns: a ManagedCluster's own name, or a
// namespace named after an existing one.
func clusterNamespace(req *admissionv1.AdmissionRequest, isCluster func(string) bool) string {
	if req.Resource.Group == "cluster.open-cluster-management.io" && req.Resource.Resource == "managedclusters" {
		return req.Name
	}
	if req.Namespace != "" && isCluster != nil && isCluster(req.Namespace) {
		return req.Namespace
	}
	return ""
}

func childMap(m map[string]any, key string) map[string]any {
	if m == nil {
		return nil
	}
	c, _ := m[key].(map[string]any)
	return c
}

func childString(m map[string]any, key string) string {
	if m == nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

// executorOf is input.executor of a ManifestWorkSpec, nil (null) when unset.
func executorOf(spec map[string]any) any {
	e := childMap(spec, "executor")
	if e == nil {
		return nil
	}
	subject := childMap(e, "subject")
	sa := childMap(subject, "serviceAccount")
	ns, name := childString(sa, "namespace"), childString(sa, "name")
	return map[string]any{
		"kind":      childString(subject, "type"),
		"namespace": ns,
		"name":      name,
		"username":  "system:serviceaccount:" + ns + ":" + name,
	}
}

// manifestsOf summarises spec.workload.manifests.
func manifestsOf(spec map[string]any) []any {
	list, _ := childMap(spec, "workload")["manifests"].([]any)
	out := make([]any, 0, len(list))
	for _, m := range list {
		obj, _ := m.(map[string]any)
		apiVersion := childString(obj, "apiVersion")
		group, version, ok := strings.Cut(apiVersion, "/")
		if !ok {
			group, version = "", apiVersion
		}
		meta := childMap(obj, "metadata")
		out = append(out, map[string]any{
			"group": group, "version": version, "kind": childString(obj, "kind"),
			"namespace": childString(meta, "namespace"), "name": childString(meta, "name"),
		})
	}
	return out
}

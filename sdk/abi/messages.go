package abi

import (
	"errors"
	"slices"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

// JSON messages of the CSRApproval, FeedbackExtractor and AddOnTemplate extension
// points, version 1. Each type has a hand-written AppendJSON/DecodeJSON pair for
// guests; the host may use encoding/json with the same struct tags: both produce
// the same bytes (tested). Decoders ignore unknown fields, so adding an optional
// field is compatible within a version; anything else bumps the version.

// Message versions, one per extension point.
const (
	CSRApprovalVersion       = 1
	FeedbackExtractorVersion = 1
	AddOnTemplateVersion     = 1
)

// RawJSON is a JSON value carried verbatim. Empty means absent (encoded as null).
type RawJSON []byte

// MarshalJSON lets encoding/json embed the value as is.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of the value's text.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = nil
		return nil
	}
	*r = append((*r)[:0], b...)
	return nil
}

func readRaw(r *jsonlite.Reader) (RawJSON, error) {
	if r.Null() {
		return nil, nil
	}
	raw, err := r.Raw()
	if err != nil {
		return nil, err
	}
	return RawJSON(slices.Clone(raw)), nil
}

func readStrings(r *jsonlite.Reader) ([]string, error) {
	if r.Null() {
		return nil, nil
	}
	out := []string{}
	err := r.Array(func(i int) error {
		s, err := r.String()
		if err != nil {
			return indexErr(i, err)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// writeStrings writes a string list the way encoding/json does: nil is null.
func writeStrings(w *jsonlite.Writer, key string, v []string) {
	w.Key(key)
	if v == nil {
		w.Null()
		return
	}
	w.BeginArray()
	for _, s := range v {
		w.String(s)
	}
	w.EndArray()
}

func decodeDoc(message string, data []byte, fields func(r *jsonlite.Reader, key string) error) error {
	r := jsonlite.NewReader(data)
	if r.Peek() != jsonlite.Object {
		return wrapDecode(message, errors.New("expected a JSON object"))
	}
	err := r.Object(func(key string) error { return fieldErr(key, fields(r, key)) })
	if err == nil {
		err = r.End()
	}
	return wrapDecode(message, err)
}

// ---- CSRApproval ----

// CSRSubject is the subject of the certificate request.
type CSRSubject struct {
	CommonName    string   `json:"commonName"`
	Organizations []string `json:"organizations"`
}

// CSRReview is the review_csr input: one pending CertificateSigningRequest and what
// the host knows about the cluster it is for.
type CSRReview struct {
	Name       string     `json:"name"`
	SignerName string     `json:"signerName"`
	Username   string     `json:"username"`
	UID        string     `json:"uid"`
	Groups     []string   `json:"groups"`
	Usages     []string   `json:"usages"`
	Subject    CSRSubject `json:"subject"`
	// ClusterName is the cluster the request is for (its open-cluster-management.io/cluster-name label).
	ClusterName     string `json:"clusterName"`
	ClusterExists   bool   `json:"clusterExists"`
	ClusterAccepted bool   `json:"clusterAccepted"`
	// Renewal is computed by the host: true when the requester is the cluster's own
	// agent identity rather than a bootstrap identity.
	Renewal bool `json:"renewal"`
	// Addon is set on the CSR of an add-on agent (labelled open-cluster-management.io/addon-name)
	// and absent on the CSRs of registration agents. A plugin written for registration CSRs
	// only must abstain when it is set. See CSRAddon.
	Addon *CSRAddon `json:"addon,omitempty"`
}

// CSRDecisionKind is a plugin's verdict on a CSR.
type CSRDecisionKind string

const (
	CSRApprove CSRDecisionKind = "Approve"
	CSRDeny    CSRDecisionKind = "Deny"
	// CSRAbstain leaves the decision to other rules (or to a human).
	CSRAbstain CSRDecisionKind = "Abstain"
)

// CSRDecision is the review_csr output.
type CSRDecision struct {
	Decision CSRDecisionKind `json:"decision"`
	Message  string          `json:"message,omitempty"`
}

// Validate checks the decision is one of Approve, Deny or Abstain.
func (d *CSRDecision) Validate() error {
	switch d.Decision {
	case CSRApprove, CSRDeny, CSRAbstain:
		return nil
	}
	return &MessageError{Message: "csr decision", Err: &FieldError{Path: "decision", Err: errors.New(strconv.Quote(string(d.Decision)) + " is not Approve, Deny or Abstain")}}
}

// AppendJSON appends the review as JSON.
func (c *CSRReview) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.StringField("name", c.Name)
	w.StringField("signerName", c.SignerName)
	w.StringField("username", c.Username)
	w.StringField("uid", c.UID)
	writeStrings(w, "groups", c.Groups)
	writeStrings(w, "usages", c.Usages)
	w.Key("subject")
	w.BeginObject()
	w.StringField("commonName", c.Subject.CommonName)
	writeStrings(w, "organizations", c.Subject.Organizations)
	w.EndObject()
	w.StringField("clusterName", c.ClusterName)
	w.BoolField("clusterExists", c.ClusterExists)
	w.BoolField("clusterAccepted", c.ClusterAccepted)
	w.BoolField("renewal", c.Renewal)
	if c.Addon != nil {
		w.Key("addon")
		c.Addon.appendJSON(w)
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces c with the review in data.
func (c *CSRReview) DecodeJSON(data []byte) error {
	*c = CSRReview{}
	return decodeDoc("csr review", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "name":
			c.Name, err = r.String()
		case "signerName":
			c.SignerName, err = r.String()
		case "username":
			c.Username, err = r.String()
		case "uid":
			c.UID, err = r.String()
		case "groups":
			c.Groups, err = readStrings(r)
		case "usages":
			c.Usages, err = readStrings(r)
		case "subject":
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "commonName":
					c.Subject.CommonName, err = r.String()
				case "organizations":
					c.Subject.Organizations, err = readStrings(r)
				}
				return fieldErr(key, err)
			})
		case "clusterName":
			c.ClusterName, err = r.String()
		case "clusterExists":
			c.ClusterExists, err = r.Bool()
		case "clusterAccepted":
			c.ClusterAccepted, err = r.Bool()
		case "renewal":
			c.Renewal, err = r.Bool()
		case "addon":
			c.Addon, err = readCSRAddon(r)
		}
		return err
	})
}

// AppendJSON appends the decision as JSON.
func (d *CSRDecision) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.StringField("decision", string(d.Decision))
	if d.Message != "" {
		w.StringField("message", d.Message)
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces d with the decision in data and validates it.
func (d *CSRDecision) DecodeJSON(data []byte) error {
	*d = CSRDecision{}
	err := decodeDoc("csr decision", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "decision":
			var s string
			s, err = r.String()
			d.Decision = CSRDecisionKind(s)
		case "message":
			d.Message, err = r.String()
		}
		return err
	})
	if err != nil {
		return err
	}
	return d.Validate()
}

// ---- FeedbackExtractor ----

// ResourceIdentifier names the applied resource, as in ManifestWork status.
type ResourceIdentifier struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Resource  string `json:"resource"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// FeedbackRequest is the extract_feedback input.
type FeedbackRequest struct {
	// Resource is the applied object as the managed cluster's API server returns it.
	Resource   RawJSON            `json:"resource"`
	Identifier ResourceIdentifier `json:"identifier"`
}

// ValueType is the type of a status feedback value (OCM's enum).
type ValueType string

const (
	ValueInteger ValueType = "Integer"
	ValueString  ValueType = "String"
	ValueBoolean ValueType = "Boolean"
	ValueJsonRaw ValueType = "JsonRaw"
)

// MaxJsonRawLength bounds a JsonRaw value, as OCM's API does.
const MaxJsonRawLength = 1024

// FieldValue is one typed feedback value; exactly the member matching Type is set.
type FieldValue struct {
	Type    ValueType `json:"type"`
	Integer *int64    `json:"integer,omitempty"`
	String  *string   `json:"string,omitempty"`
	Boolean *bool     `json:"boolean,omitempty"`
	JsonRaw *string   `json:"jsonRaw,omitempty"`
}

// FeedbackValue is a named FieldValue.
type FeedbackValue struct {
	Name       string     `json:"name"`
	FieldValue FieldValue `json:"fieldValue"`
}

// FeedbackResult is the extract_feedback output.
type FeedbackResult struct {
	Values []FeedbackValue `json:"values"`
}

// IntegerValue, StringValue, BooleanValue and JsonRawValue build FeedbackValues.
func IntegerValue(name string, v int64) FeedbackValue {
	return FeedbackValue{Name: name, FieldValue: FieldValue{Type: ValueInteger, Integer: &v}}
}

func StringValue(name, v string) FeedbackValue {
	return FeedbackValue{Name: name, FieldValue: FieldValue{Type: ValueString, String: &v}}
}

func BooleanValue(name string, v bool) FeedbackValue {
	return FeedbackValue{Name: name, FieldValue: FieldValue{Type: ValueBoolean, Boolean: &v}}
}

func JsonRawValue(name string, raw []byte) FeedbackValue {
	s := string(raw)
	return FeedbackValue{Name: name, FieldValue: FieldValue{Type: ValueJsonRaw, JsonRaw: &s}}
}

// Validate checks every value: a non-empty unique name, a known type whose member
// (and only it) is set, and JsonRaw text that is valid JSON within MaxJsonRawLength.
func (f *FeedbackResult) Validate() error {
	for i, v := range f.Values {
		if err := v.validate(f.Values[:i]); err != nil {
			return &MessageError{Message: "feedback result", Err: prefixPath("values", indexErr(i, err))}
		}
	}
	return nil
}

func (v *FeedbackValue) validate(before []FeedbackValue) error {
	if v.Name == "" {
		return fieldErr("name", errors.New("must not be empty"))
	}
	for j, p := range before {
		if p.Name == v.Name {
			return fieldErr("name", errors.New(strconv.Quote(v.Name)+" duplicates values["+strconv.Itoa(j)+"]"))
		}
	}
	fv := &v.FieldValue
	set := 0
	for _, p := range []bool{fv.Integer != nil, fv.String != nil, fv.Boolean != nil, fv.JsonRaw != nil} {
		if p {
			set++
		}
	}
	var ok bool
	switch fv.Type {
	case ValueInteger:
		ok = fv.Integer != nil
	case ValueString:
		ok = fv.String != nil
	case ValueBoolean:
		ok = fv.Boolean != nil
	case ValueJsonRaw:
		ok = fv.JsonRaw != nil
		if ok && len(*fv.JsonRaw) > MaxJsonRawLength {
			return fieldErr("fieldValue", fieldErr("jsonRaw", errors.New(strconv.Itoa(len(*fv.JsonRaw))+" bytes, at most "+strconv.Itoa(MaxJsonRawLength)+" allowed")))
		}
		if ok && !jsonlite.Valid([]byte(*fv.JsonRaw)) {
			return fieldErr("fieldValue", fieldErr("jsonRaw", errors.New("not valid JSON")))
		}
	default:
		return fieldErr("fieldValue", fieldErr("type", errors.New(strconv.Quote(string(fv.Type))+" is not Integer, String, Boolean or JsonRaw")))
	}
	if !ok || set != 1 {
		return fieldErr("fieldValue", errors.New("type "+string(fv.Type)+" needs exactly its own member set"))
	}
	return nil
}

// AppendJSON appends the request as JSON.
func (f *FeedbackRequest) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.Key("resource")
	w.Raw(f.Resource)
	w.Key("identifier")
	w.BeginObject()
	w.StringField("group", f.Identifier.Group)
	w.StringField("version", f.Identifier.Version)
	w.StringField("kind", f.Identifier.Kind)
	w.StringField("resource", f.Identifier.Resource)
	w.StringField("name", f.Identifier.Name)
	w.StringField("namespace", f.Identifier.Namespace)
	w.EndObject()
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces f with the request in data. Resource is copied.
func (f *FeedbackRequest) DecodeJSON(data []byte) error {
	*f = FeedbackRequest{}
	return decodeDoc("feedback request", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "resource":
			f.Resource, err = readRaw(r)
		case "identifier":
			id := &f.Identifier
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "group":
					id.Group, err = r.String()
				case "version":
					id.Version, err = r.String()
				case "kind":
					id.Kind, err = r.String()
				case "resource":
					id.Resource, err = r.String()
				case "name":
					id.Name, err = r.String()
				case "namespace":
					id.Namespace, err = r.String()
				}
				return fieldErr(key, err)
			})
		}
		return err
	})
}

// AppendJSON appends the result as JSON.
func (f *FeedbackResult) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.Key("values")
	if f.Values == nil {
		w.Null()
	} else {
		w.BeginArray()
		for _, v := range f.Values {
			w.BeginObject()
			w.StringField("name", v.Name)
			w.Key("fieldValue")
			w.BeginObject()
			fv := &v.FieldValue
			w.StringField("type", string(fv.Type))
			if fv.Integer != nil {
				w.IntField("integer", *fv.Integer)
			}
			if fv.String != nil {
				w.StringField("string", *fv.String)
			}
			if fv.Boolean != nil {
				w.BoolField("boolean", *fv.Boolean)
			}
			if fv.JsonRaw != nil {
				w.StringField("jsonRaw", *fv.JsonRaw)
			}
			w.EndObject()
			w.EndObject()
		}
		w.EndArray()
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces f with the result in data and validates it.
func (f *FeedbackResult) DecodeJSON(data []byte) error {
	*f = FeedbackResult{}
	err := decodeDoc("feedback result", data, func(r *jsonlite.Reader, key string) error {
		if key != "values" {
			return nil
		}
		if r.Null() {
			return nil
		}
		f.Values = []FeedbackValue{}
		return r.Array(func(i int) error {
			var v FeedbackValue
			err := r.Object(func(key string) error {
				var err error
				switch key {
				case "name":
					v.Name, err = r.String()
				case "fieldValue":
					err = decodeFieldValue(r, &v.FieldValue)
				}
				return fieldErr(key, err)
			})
			f.Values = append(f.Values, v)
			return indexErr(i, err)
		})
	})
	if err != nil {
		return err
	}
	return f.Validate()
}

func decodeFieldValue(r *jsonlite.Reader, fv *FieldValue) error {
	return r.Object(func(key string) error {
		var err error
		switch key {
		case "type":
			var s string
			s, err = r.String()
			fv.Type = ValueType(s)
		case "integer":
			if !r.Null() {
				var i int64
				i, err = r.Int()
				fv.Integer = &i
			}
		case "string":
			if !r.Null() {
				var s string
				s, err = r.String()
				fv.String = &s
			}
		case "boolean":
			if !r.Null() {
				var b bool
				b, err = r.Bool()
				fv.Boolean = &b
			}
		case "jsonRaw":
			if !r.Null() {
				var s string
				s, err = r.String()
				fv.JsonRaw = &s
			}
		}
		return fieldErr(key, err)
	})
}

// ---- AddOnTemplate ----

// AddOnRequest is the render_addon input: everything the hub knows about one add-on
// on one managed cluster. Fields after Config were added within version 1 and are
// absent (zero) when a host does not send them.
type AddOnRequest struct {
	AddOnName   string `json:"addonName"`
	ClusterName string `json:"clusterName"`
	// InstallNamespace is where the agent runs: the AddOnDeploymentConfig's
	// agentInstallNamespace, else the ManagedClusterAddOn's installNamespace.
	InstallNamespace string `json:"installNamespace"`
	// Variables are the add-on's template variables: the AddOnDeploymentConfig's
	// customizedVariables and the built-ins CLUSTER_NAME, INSTALL_NAMESPACE and, when
	// the add-on registers with the hub, HUB_KUBECONFIG.
	Variables map[string]string `json:"variables"`
	// Config is the spec of the add-on's resolved AddOnDeploymentConfig, if any.
	Config RawJSON `json:"config,omitempty"`
	// Cluster describes the managed cluster.
	Cluster *AddOnCluster `json:"cluster,omitempty"`
	// Configs are the add-on's other resolved configurations (not the
	// AddOnDeploymentConfig, which is Config), in the order the add-on lists them.
	Configs []AddOnConfig `json:"configs,omitempty"`
	// HubKubeconfigSecret is set when the agent registers with the hub: the Secret
	// in InstallNamespace holding its hub kubeconfig. The host mounts it at
	// /managed/hub-kubeconfig in the agent's workloads.
	HubKubeconfigSecret string `json:"hubKubeconfigSecret,omitempty"`
}

// AddOnCluster is the managed cluster an add-on is rendered for.
type AddOnCluster struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Claims are the cluster's ClusterClaims (status.clusterClaims), name to value.
	Claims map[string]string `json:"claims,omitempty"`
	// KubernetesVersion is status.version.kubernetes, e.g. "v1.36.3".
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Capacity and Allocatable are status.capacity and status.allocatable in
	// milli-units, as in the Prioritizer input: 4 CPUs is 4000, 1Ki of memory is
	// 1024000. Values saturate at the int64 range.
	Capacity    map[string]int64 `json:"capacity,omitempty"`
	Allocatable map[string]int64 `json:"allocatable,omitempty"`
}

// AddOnConfig is one resolved configuration object of an add-on.
type AddOnConfig struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Object is the whole object as JSON.
	Object RawJSON `json:"object,omitempty"`
}

// AddOnResult is the render_addon output: the manifests to deploy, each one
// Kubernetes object as JSON, and optionally the ManifestWork manifestConfigs for
// them (each a ManifestConfigOption as JSON: resourceIdentifier, feedbackRules,
// updateStrategy, conditionRules, feedbackScrapeType).
type AddOnResult struct {
	Manifests       []RawJSON `json:"manifests"`
	ManifestConfigs []RawJSON `json:"manifestConfigs,omitempty"`
}

// Validate checks that every manifest is a JSON object with apiVersion, kind,
// metadata.name and, if set, a metadata.namespace that is a DNS label, and that
// every manifestConfig is an object whose resourceIdentifier has a resource and a
// name. The host checks more (see PLUGINS.md).
func (a *AddOnResult) Validate() error {
	for i, m := range a.Manifests {
		if err := validateManifest(m); err != nil {
			return &MessageError{Message: "addon result", Err: prefixPath("manifests", indexErr(i, err))}
		}
	}
	for i, m := range a.ManifestConfigs {
		if err := validateManifestConfig(m); err != nil {
			return &MessageError{Message: "addon result", Err: prefixPath("manifestConfigs", indexErr(i, err))}
		}
	}
	return nil
}

func validateManifestConfig(m []byte) error {
	r := jsonlite.NewReader(m)
	if r.Peek() != jsonlite.Object {
		return errors.New("expected a JSON object")
	}
	var resource, name string
	found := false
	err := r.Object(func(key string) error {
		if key != "resourceIdentifier" {
			return r.Skip()
		}
		found = true
		return fieldErr(key, r.Object(func(key string) error {
			var err error
			switch key {
			case "resource":
				resource, err = r.String()
			case "name":
				name, err = r.String()
			default:
				err = r.Skip()
			}
			return fieldErr(key, err)
		}))
	})
	if err == nil {
		err = r.End()
	}
	switch {
	case err != nil:
		return err
	case !found:
		return fieldErr("resourceIdentifier", errors.New("must be set"))
	case resource == "":
		return fieldErr("resourceIdentifier.resource", errors.New("must be set"))
	case name == "":
		return fieldErr("resourceIdentifier.name", errors.New("must be set"))
	}
	return nil
}

// dnsLabel reports whether s is an RFC 1123 label (a valid namespace name).
func dnsLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

func validateManifest(m []byte) error {
	r := jsonlite.NewReader(m)
	if r.Peek() != jsonlite.Object {
		return errors.New("expected a JSON object")
	}
	var apiVersion, kind, name, namespace string
	err := r.Object(func(key string) error {
		var err error
		switch key {
		case "apiVersion":
			apiVersion, err = r.String()
		case "kind":
			kind, err = r.String()
		case "metadata":
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "name":
					name, err = r.String()
				case "namespace":
					if !r.Null() {
						namespace, err = r.String()
					}
				}
				return fieldErr(key, err)
			})
		}
		return fieldErr(key, err)
	})
	if err == nil {
		err = r.End()
	}
	switch {
	case err != nil:
		return err
	case apiVersion == "":
		return fieldErr("apiVersion", errors.New("must be set"))
	case kind == "":
		return fieldErr("kind", errors.New("must be set"))
	case name == "":
		return fieldErr("metadata.name", errors.New("must be set"))
	case namespace != "" && !dnsLabel(namespace):
		return fieldErr("metadata.namespace", errors.New(strconv.Quote(namespace)+" is not a valid namespace name"))
	}
	return nil
}

// AppendJSON appends the request as JSON (map keys in order, like encoding/json).
func (a *AddOnRequest) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.StringField("addonName", a.AddOnName)
	w.StringField("clusterName", a.ClusterName)
	w.StringField("installNamespace", a.InstallNamespace)
	w.Key("variables")
	if a.Variables == nil {
		w.Null()
	} else {
		writeStringMap(w, a.Variables)
	}
	if len(a.Config) > 0 {
		w.Key("config")
		w.Raw(a.Config)
	}
	if c := a.Cluster; c != nil {
		w.Key("cluster")
		w.BeginObject()
		w.StringField("name", c.Name)
		if len(c.Labels) > 0 {
			w.Key("labels")
			writeStringMap(w, c.Labels)
		}
		if len(c.Claims) > 0 {
			w.Key("claims")
			writeStringMap(w, c.Claims)
		}
		if c.KubernetesVersion != "" {
			w.StringField("kubernetesVersion", c.KubernetesVersion)
		}
		if len(c.Capacity) > 0 {
			w.Key("capacity")
			writeIntMap(w, c.Capacity)
		}
		if len(c.Allocatable) > 0 {
			w.Key("allocatable")
			writeIntMap(w, c.Allocatable)
		}
		w.EndObject()
	}
	if len(a.Configs) > 0 {
		w.Key("configs")
		w.BeginArray()
		for _, c := range a.Configs {
			w.BeginObject()
			w.StringField("group", c.Group)
			w.StringField("resource", c.Resource)
			if c.Namespace != "" {
				w.StringField("namespace", c.Namespace)
			}
			w.StringField("name", c.Name)
			if len(c.Object) > 0 {
				w.Key("object")
				w.Raw(c.Object)
			}
			w.EndObject()
		}
		w.EndArray()
	}
	if a.HubKubeconfigSecret != "" {
		w.StringField("hubKubeconfigSecret", a.HubKubeconfigSecret)
	}
	w.EndObject()
	return w.Bytes()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func writeStringMap(w *jsonlite.Writer, m map[string]string) {
	w.BeginObject()
	for _, k := range sortedKeys(m) {
		w.StringField(k, m[k])
	}
	w.EndObject()
}

func writeIntMap(w *jsonlite.Writer, m map[string]int64) {
	w.BeginObject()
	for _, k := range sortedKeys(m) {
		w.IntField(k, m[k])
	}
	w.EndObject()
}

func readStringMap(r *jsonlite.Reader) (map[string]string, error) {
	if r.Null() {
		return nil, nil
	}
	m := map[string]string{}
	err := r.Object(func(key string) error {
		v, err := r.String()
		m[key] = v
		return fieldErr(key, err)
	})
	return m, err
}

func readIntMap(r *jsonlite.Reader) (map[string]int64, error) {
	if r.Null() {
		return nil, nil
	}
	m := map[string]int64{}
	err := r.Object(func(key string) error {
		v, err := r.Int()
		m[key] = v
		return fieldErr(key, err)
	})
	return m, err
}

// DecodeJSON replaces a with the request in data. Raw values are copied.
func (a *AddOnRequest) DecodeJSON(data []byte) error {
	*a = AddOnRequest{}
	return decodeDoc("addon request", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "addonName":
			a.AddOnName, err = r.String()
		case "clusterName":
			a.ClusterName, err = r.String()
		case "installNamespace":
			a.InstallNamespace, err = r.String()
		case "variables":
			a.Variables, err = readStringMap(r)
		case "config":
			a.Config, err = readRaw(r)
		case "cluster":
			if r.Null() {
				return nil
			}
			c := &AddOnCluster{}
			a.Cluster = c
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "name":
					c.Name, err = r.String()
				case "labels":
					c.Labels, err = readStringMap(r)
				case "claims":
					c.Claims, err = readStringMap(r)
				case "kubernetesVersion":
					c.KubernetesVersion, err = r.String()
				case "capacity":
					c.Capacity, err = readIntMap(r)
				case "allocatable":
					c.Allocatable, err = readIntMap(r)
				}
				return fieldErr(key, err)
			})
		case "configs":
			if r.Null() {
				return nil
			}
			a.Configs = []AddOnConfig{}
			err = r.Array(func(i int) error {
				var c AddOnConfig
				err := r.Object(func(key string) error {
					var err error
					switch key {
					case "group":
						c.Group, err = r.String()
					case "resource":
						c.Resource, err = r.String()
					case "namespace":
						c.Namespace, err = r.String()
					case "name":
						c.Name, err = r.String()
					case "object":
						c.Object, err = readRaw(r)
					}
					return fieldErr(key, err)
				})
				a.Configs = append(a.Configs, c)
				return indexErr(i, err)
			})
		case "hubKubeconfigSecret":
			a.HubKubeconfigSecret, err = r.String()
		}
		return err
	})
}

// Claim returns the value of the cluster claim name, or "" without a cluster.
func (a *AddOnRequest) Claim(name string) string {
	if a.Cluster == nil {
		return ""
	}
	return a.Cluster.Claims[name]
}

// Allocatable returns the cluster's allocatable amount of resource in milli-units
// (cpu 4 → 4000) and whether the host reported it.
func (a *AddOnRequest) Allocatable(resource string) (int64, bool) {
	if a.Cluster == nil {
		return 0, false
	}
	v, ok := a.Cluster.Allocatable[resource]
	return v, ok
}

// AppendJSON appends the result as JSON.
func (a *AddOnResult) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.Key("manifests")
	writeRaws(w, a.Manifests)
	if len(a.ManifestConfigs) > 0 {
		w.Key("manifestConfigs")
		writeRaws(w, a.ManifestConfigs)
	}
	w.EndObject()
	return w.Bytes()
}

func writeRaws(w *jsonlite.Writer, raws []RawJSON) {
	if raws == nil {
		w.Null()
		return
	}
	w.BeginArray()
	for _, m := range raws {
		w.Raw(m)
	}
	w.EndArray()
}

func readRaws(r *jsonlite.Reader) ([]RawJSON, error) {
	if r.Null() {
		return nil, nil
	}
	out := []RawJSON{}
	err := r.Array(func(i int) error {
		m, err := readRaw(r)
		out = append(out, m)
		return indexErr(i, err)
	})
	return out, err
}

// DecodeJSON replaces a with the result in data and validates it.
func (a *AddOnResult) DecodeJSON(data []byte) error {
	*a = AddOnResult{}
	err := decodeDoc("addon result", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "manifests":
			a.Manifests, err = readRaws(r)
		case "manifestConfigs":
			a.ManifestConfigs, err = readRaws(r)
		}
		return err
	})
	if err != nil {
		return err
	}
	return a.Validate()
}

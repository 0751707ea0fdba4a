package abi

import (
	"errors"
	"slices"

	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

// ManifestTransformerVersion is the version of the transform_manifest messages.
const ManifestTransformerVersion = 1

// MaxTransformOutputBytes bounds a transform_manifest output; the host refuses a larger one.
const MaxTransformOutputBytes = 1 << 20

// TransformRequest is the transform_manifest input: one manifest of a
// ManifestWorkReplicaSet's template as the earlier override rules left it, for one
// cluster. The host makes one call per cluster, selected manifest and transform rule.
type TransformRequest struct {
	ReplicaSet ObjectRef         `json:"replicaSet"`
	Override   TransformOverride `json:"override"`
	Cluster    TransformCluster  `json:"cluster"`
	// Placement is the name of the Placement whose decision chose the cluster.
	Placement     string        `json:"placement"`
	DecisionGroup DecisionGroup `json:"decisionGroup"`
	// Params is the rule's transform.params, verbatim; absent when the rule has none.
	Params RawJSON `json:"params,omitempty"`
	// Manifest is the Kubernetes object to transform.
	Manifest RawJSON `json:"manifest"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// TransformOverride names the ManifestWorkReplicaSetOverride and its rule that asked for
// the transform.
type TransformOverride struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Rule      string `json:"rule"`
}

// TransformCluster is the managed cluster a manifest is transformed for.
type TransformCluster struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Claims are the cluster's ClusterClaims (status.clusterClaims), name to value.
	Claims            map[string]string `json:"claims,omitempty"`
	KubernetesVersion string            `json:"kubernetesVersion,omitempty"`
	// Capacity and Allocatable are in milli-units, as in the other inputs (4 CPUs is 4000).
	Capacity    map[string]int64 `json:"capacity,omitempty"`
	Allocatable map[string]int64 `json:"allocatable,omitempty"`
	// ClusterSets are the ManagedClusterSets the cluster belongs to, sorted.
	ClusterSets []string `json:"clusterSets,omitempty"`
}

// DecisionGroup is the placement decision group the cluster is in.
type DecisionGroup struct {
	Index int64  `json:"index"`
	Name  string `json:"name"`
}

// TransformResult is the transform_manifest output: exactly one of Manifest (the whole
// transformed object) or Patch (RFC 6902 operations against the input manifest; an empty,
// non-nil Patch changes nothing).
type TransformResult struct {
	Manifest RawJSON   `json:"manifest,omitempty"`
	Patch    []PatchOp `json:"patch,omitempty"`
}

// PatchOp is one RFC 6902 operation. Value is the operation's value as JSON text
// (RawJSON("null") for a JSON null); From is for move and copy.
type PatchOp struct {
	Op    string  `json:"op"`
	Path  string  `json:"path"`
	From  string  `json:"from,omitempty"`
	Value RawJSON `json:"value,omitempty"`
}

// Claim returns the value of the cluster claim name ("" when absent).
func (t *TransformRequest) Claim(name string) string { return t.Cluster.Claims[name] }

// Label returns the value of the cluster label name ("" when absent).
func (t *TransformRequest) Label(name string) string { return t.Cluster.Labels[name] }

// Allocatable returns the cluster's allocatable amount of resource in milli-units and
// whether the host reported it.
func (t *TransformRequest) Allocatable(resource string) (int64, bool) {
	v, ok := t.Cluster.Allocatable[resource]
	return v, ok
}

// AppendJSON appends the request as JSON (map keys in order, like encoding/json).
func (t *TransformRequest) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	w.Key("replicaSet")
	w.BeginObject()
	w.StringField("namespace", t.ReplicaSet.Namespace)
	w.StringField("name", t.ReplicaSet.Name)
	w.EndObject()
	w.Key("override")
	w.BeginObject()
	w.StringField("namespace", t.Override.Namespace)
	w.StringField("name", t.Override.Name)
	w.StringField("rule", t.Override.Rule)
	w.EndObject()
	c := &t.Cluster
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
	if len(c.ClusterSets) > 0 {
		writeStrings(w, "clusterSets", c.ClusterSets)
	}
	w.EndObject()
	w.StringField("placement", t.Placement)
	w.Key("decisionGroup")
	w.BeginObject()
	w.IntField("index", t.DecisionGroup.Index)
	w.StringField("name", t.DecisionGroup.Name)
	w.EndObject()
	if len(t.Params) > 0 {
		w.Key("params")
		w.Raw(t.Params)
	}
	w.Key("manifest")
	if len(t.Manifest) == 0 {
		w.Null()
	} else {
		w.Raw(t.Manifest)
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces t with the request in data. Raw values are copied.
func (t *TransformRequest) DecodeJSON(data []byte) error {
	*t = TransformRequest{}
	return decodeDoc("transform request", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "replicaSet":
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "namespace":
					t.ReplicaSet.Namespace, err = r.String()
				case "name":
					t.ReplicaSet.Name, err = r.String()
				default:
					err = r.Skip()
				}
				return fieldErr(key, err)
			})
		case "override":
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "namespace":
					t.Override.Namespace, err = r.String()
				case "name":
					t.Override.Name, err = r.String()
				case "rule":
					t.Override.Rule, err = r.String()
				default:
					err = r.Skip()
				}
				return fieldErr(key, err)
			})
		case "cluster":
			c := &t.Cluster
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
				case "clusterSets":
					c.ClusterSets, err = readStrings(r)
				default:
					err = r.Skip()
				}
				return fieldErr(key, err)
			})
		case "placement":
			t.Placement, err = r.String()
		case "decisionGroup":
			err = r.Object(func(key string) error {
				var err error
				switch key {
				case "index":
					t.DecisionGroup.Index, err = r.Int()
				case "name":
					t.DecisionGroup.Name, err = r.String()
				default:
					err = r.Skip()
				}
				return fieldErr(key, err)
			})
		case "params":
			t.Params, err = readRaw(r)
		case "manifest":
			t.Manifest, err = readRaw(r)
		default:
			err = r.Skip()
		}
		return err
	})
}

// AppendJSON appends the result as JSON. A non-nil empty Patch is written as [].
func (t *TransformResult) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	if len(t.Manifest) > 0 {
		w.Key("manifest")
		w.Raw(t.Manifest)
	}
	if t.Patch != nil {
		w.Key("patch")
		w.BeginArray()
		for _, op := range t.Patch {
			w.BeginObject()
			w.StringField("op", op.Op)
			w.StringField("path", op.Path)
			if op.From != "" {
				w.StringField("from", op.From)
			}
			if len(op.Value) > 0 {
				w.Key("value")
				w.Raw(op.Value)
			}
			w.EndObject()
		}
		w.EndArray()
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces t with the result in data and validates it. A patch value of
// null is kept as RawJSON("null").
func (t *TransformResult) DecodeJSON(data []byte) error {
	*t = TransformResult{}
	err := decodeDoc("transform result", data, func(r *jsonlite.Reader, key string) error {
		var err error
		switch key {
		case "manifest":
			t.Manifest, err = readRaw(r)
		case "patch":
			if r.Null() {
				return nil
			}
			t.Patch = []PatchOp{}
			err = r.Array(func(i int) error {
				var op PatchOp
				err := r.Object(func(key string) error {
					var err error
					switch key {
					case "op":
						op.Op, err = r.String()
					case "path":
						op.Path, err = r.String()
					case "from":
						op.From, err = r.String()
					case "value":
						var raw []byte
						raw, err = r.Raw()
						op.Value = RawJSON(slices.Clone(raw))
					default:
						err = r.Skip()
					}
					return fieldErr(key, err)
				})
				t.Patch = append(t.Patch, op)
				return indexErr(i, err)
			})
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	return t.Validate()
}

// Validate checks that exactly one of manifest and patch is set, that a manifest is a
// JSON object and that every operation is a known RFC 6902 op with the members it needs.
// The host checks more (the manifest's identity and size; see PLUGINS.md).
func (t *TransformResult) Validate() error {
	invalid := func(err error) error { return &MessageError{Message: "transform result", Err: err} }
	switch {
	case len(t.Manifest) > 0 && t.Patch != nil:
		return invalid(errors.New("set exactly one of manifest and patch, not both"))
	case len(t.Manifest) == 0 && t.Patch == nil:
		return invalid(errors.New("set exactly one of manifest and patch"))
	case len(t.Manifest) > 0:
		if jsonlite.NewReader(t.Manifest).Peek() != jsonlite.Object {
			return invalid(fieldErr("manifest", errors.New("expected a JSON object")))
		}
	}
	for i, op := range t.Patch {
		if err := validatePatchOp(op); err != nil {
			return invalid(prefixPath("patch", indexErr(i, err)))
		}
	}
	return nil
}

func validatePatchOp(op PatchOp) error {
	pointer := func(key, p string) error {
		if p != "" && p[0] != '/' {
			return fieldErr(key, errors.New("a JSON pointer must be empty or start with /"))
		}
		return nil
	}
	if err := pointer("path", op.Path); err != nil {
		return err
	}
	switch op.Op {
	case "add", "replace", "test":
		if len(op.Value) == 0 {
			return fieldErr("value", errors.New("must be set for op "+op.Op))
		}
	case "remove":
	case "move", "copy":
		if op.From == "" {
			return fieldErr("from", errors.New("must be set for op "+op.Op))
		}
		return pointer("from", op.From)
	default:
		return fieldErr("op", errors.New("must be one of add, remove, replace, move, copy, test"))
	}
	return nil
}

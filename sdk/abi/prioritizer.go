package abi

import (
	"errors"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

// Prioritizer ABI, version 1.
//
// At load time the host calls declare_inputs (input: empty) and the plugin answers
// with a PrioritizerInputs JSON document naming the cluster attributes it reads.
// Once per scheduling cycle the host calls score with every candidate cluster in
// the binary layout described in scoreinput.go, carrying only those attributes, and
// the plugin answers with one little-endian int64 per cluster, in input order.
// Scores outside [MinClusterScore, MaxClusterScore] are clamped by the host.
//
// Besides cluster attributes, a plugin may ask for two facts about the placement
// being scheduled (Decisions, Selected), which OCM's Balance and Steady
// prioritizers need. They were added within version 1: a host only sends them to
// a plugin that declares them, so plugins built before keep receiving exactly the
// layout they know.

// PrioritizerInputVersion is the version of the score input layout (its header
// carries it) and of the declare_inputs document.
const PrioritizerInputVersion = 1

// Score bounds, as in OCM placement: the host clamps plugin scores to this range.
const (
	MaxClusterScore = 100
	MinClusterScore = -100
)

// Limits on a declaration, so a plugin cannot make the host build huge inputs.
const (
	MaxLabelInputs      = 64
	MaxClaimInputs      = 64
	MaxResourceInputs   = 16
	MaxAddOnScoreInputs = 16
)

// ResourceKind says which ManagedCluster resource list a resource input reads.
type ResourceKind string

const (
	// ResourceAllocatable reads status.allocatable.
	ResourceAllocatable ResourceKind = "Allocatable"
	// ResourceCapacity reads status.capacity.
	ResourceCapacity ResourceKind = "Capacity"
)

// ResourceInput names one resource (e.g. "cpu", "memory") of one resource list.
// Values reach the plugin in milli-units (Quantity.MilliValue), saturated to int64.
type ResourceInput struct {
	Kind ResourceKind `json:"kind"`
	Name string       `json:"name"`
}

// AddOnScoreInput names one score of an AddOnPlacementScore: the resource's name
// (in the cluster namespace) and the score's name in its status.scores.
type AddOnScoreInput struct {
	ResourceName string `json:"resourceName"`
	ScoreName    string `json:"scoreName"`
}

// PrioritizerInputs is the declare_inputs answer: what the plugin reads per cluster.
type PrioritizerInputs struct {
	// ClusterNames asks for each cluster's name.
	ClusterNames bool `json:"clusterNames,omitempty"`
	// Labels are ManagedCluster label keys.
	Labels []string `json:"labels,omitempty"`
	// Claims are ClusterClaim names (status.clusterClaims[].name).
	Claims []string `json:"claims,omitempty"`
	// Resources are entries of status.allocatable or status.capacity.
	Resources []ResourceInput `json:"resources,omitempty"`
	// AddOnScores are AddOnPlacementScore values.
	AddOnScores []AddOnScoreInput `json:"addOnScores,omitempty"`
	// Decisions asks, per cluster, for the number of decisions of the other placements
	// (all namespaces) that name it, and for the largest such number over all clusters,
	// candidates or not (what OCM's Balance prioritizer reads).
	Decisions bool `json:"decisions,omitempty"`
	// Selected asks, per cluster, whether the current decisions of the placement being
	// scheduled name it (what OCM's Steady prioritizer reads).
	Selected bool `json:"selected,omitempty"`
}

// Validate checks a declaration: names non-empty, no duplicates, known kinds, within limits.
func (d *PrioritizerInputs) Validate() error {
	if err := validateKeys("labels", d.Labels, MaxLabelInputs); err != nil {
		return err
	}
	if err := validateKeys("claims", d.Claims, MaxClaimInputs); err != nil {
		return err
	}
	if len(d.Resources) > MaxResourceInputs {
		return errors.New("prioritizer inputs: resources: " + strconv.Itoa(len(d.Resources)) + " entries, at most " + strconv.Itoa(MaxResourceInputs) + " allowed")
	}
	for i, r := range d.Resources {
		field := "prioritizer inputs: resources[" + strconv.Itoa(i) + "]"
		if r.Kind != ResourceAllocatable && r.Kind != ResourceCapacity {
			return errors.New(field + ".kind: " + strconv.Quote(string(r.Kind)) + " is not Allocatable or Capacity")
		}
		if r.Name == "" {
			return errors.New(field + ".name: must not be empty")
		}
		for j := 0; j < i; j++ {
			if d.Resources[j] == r {
				return errors.New(field + ": duplicates resources[" + strconv.Itoa(j) + "]")
			}
		}
	}
	if len(d.AddOnScores) > MaxAddOnScoreInputs {
		return errors.New("prioritizer inputs: addOnScores: " + strconv.Itoa(len(d.AddOnScores)) + " entries, at most " + strconv.Itoa(MaxAddOnScoreInputs) + " allowed")
	}
	for i, a := range d.AddOnScores {
		field := "prioritizer inputs: addOnScores[" + strconv.Itoa(i) + "]"
		if a.ResourceName == "" {
			return errors.New(field + ".resourceName: must not be empty")
		}
		if a.ScoreName == "" {
			return errors.New(field + ".scoreName: must not be empty")
		}
		for j := 0; j < i; j++ {
			if d.AddOnScores[j] == a {
				return errors.New(field + ": duplicates addOnScores[" + strconv.Itoa(j) + "]")
			}
		}
	}
	return nil
}

func validateKeys(field string, keys []string, limit int) error {
	if len(keys) > limit {
		return errors.New("prioritizer inputs: " + field + ": " + strconv.Itoa(len(keys)) + " entries, at most " + strconv.Itoa(limit) + " allowed")
	}
	for i, k := range keys {
		if k == "" {
			return errors.New("prioritizer inputs: " + field + "[" + strconv.Itoa(i) + "]: must not be empty")
		}
		for j := 0; j < i; j++ {
			if keys[j] == k {
				return errors.New("prioritizer inputs: " + field + "[" + strconv.Itoa(i) + "]: " + strconv.Quote(k) + " duplicates " + field + "[" + strconv.Itoa(j) + "]")
			}
		}
	}
	return nil
}

// AppendJSON appends the declaration as JSON.
func (d *PrioritizerInputs) AppendJSON(dst []byte) []byte {
	w := jsonlite.NewWriter(dst)
	w.BeginObject()
	if d.ClusterNames {
		w.BoolField("clusterNames", true)
	}
	if len(d.Labels) > 0 {
		w.StringsField("labels", d.Labels)
	}
	if len(d.Claims) > 0 {
		w.StringsField("claims", d.Claims)
	}
	if len(d.Resources) > 0 {
		w.Key("resources")
		w.BeginArray()
		for _, r := range d.Resources {
			w.BeginObject()
			w.StringField("kind", string(r.Kind))
			w.StringField("name", r.Name)
			w.EndObject()
		}
		w.EndArray()
	}
	if len(d.AddOnScores) > 0 {
		w.Key("addOnScores")
		w.BeginArray()
		for _, a := range d.AddOnScores {
			w.BeginObject()
			w.StringField("resourceName", a.ResourceName)
			w.StringField("scoreName", a.ScoreName)
			w.EndObject()
		}
		w.EndArray()
	}
	if d.Decisions {
		w.BoolField("decisions", true)
	}
	if d.Selected {
		w.BoolField("selected", true)
	}
	w.EndObject()
	return w.Bytes()
}

// DecodeJSON replaces d with the declaration in data. Unknown fields are ignored.
func (d *PrioritizerInputs) DecodeJSON(data []byte) error {
	*d = PrioritizerInputs{}
	r := jsonlite.NewReader(data)
	err := r.Object(func(key string) error {
		var err error
		switch key {
		case "clusterNames":
			d.ClusterNames, err = r.Bool()
		case "labels":
			d.Labels, err = readStrings(r)
		case "claims":
			d.Claims, err = readStrings(r)
		case "resources":
			err = r.Array(func(i int) error {
				var ri ResourceInput
				err := r.Object(func(key string) error {
					var err error
					switch key {
					case "kind":
						var s string
						s, err = r.String()
						ri.Kind = ResourceKind(s)
					case "name":
						ri.Name, err = r.String()
					}
					return fieldErr(key, err)
				})
				d.Resources = append(d.Resources, ri)
				return indexErr(i, err)
			})
		case "addOnScores":
			err = r.Array(func(i int) error {
				var a AddOnScoreInput
				err := r.Object(func(key string) error {
					var err error
					switch key {
					case "resourceName":
						a.ResourceName, err = r.String()
					case "scoreName":
						a.ScoreName, err = r.String()
					}
					return fieldErr(key, err)
				})
				d.AddOnScores = append(d.AddOnScores, a)
				return indexErr(i, err)
			})
		case "decisions":
			d.Decisions, err = r.Bool()
		case "selected":
			d.Selected, err = r.Bool()
		}
		return fieldErr(key, err)
	})
	if err == nil {
		err = r.End()
	}
	return wrapDecode("prioritizer inputs", err)
}

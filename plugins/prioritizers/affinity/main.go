// Command affinity is Flotilla's example Prioritizer: it scores clusters by label
// and claim values and by how much of a resource they have, all configurable.
//
// pluginConfig (all lists optional; with no pluginConfig at all it prefers the
// clusters with the most allocatable CPU):
//
//	{
//	  "labels":    [{"key": "env", "value": "prod", "score": 30}],
//	  "claims":    [{"name": "region", "value": "us-east-1", "score": 20}],
//	  "resources": [{"kind": "Allocatable", "name": "cpu", "weight": 50}]
//	}
//
// A cluster earns a label or claim rule's score when it carries that exact value.
// A resource rule adds weight × (v − min) / (max − min), rounded, where min and
// max range over the candidates that report the resource (weight when all are
// equal; nothing for clusters that do not report it). Scores and weights lie in
// [-100, 100]; the sum is clamped to [-100, 100].
package main

import (
	"errors"
	"math"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
	"github.com/flotilla-dev/flotilla/sdk/prioritizer"
)

type valueRule struct {
	Key, Value string
	Score      int64
}

type resourceRule struct {
	Kind   abi.ResourceKind
	Name   string
	Weight int64
}

type config struct {
	Labels    []valueRule
	Claims    []valueRule
	Resources []resourceRule
}

var defaultConfig = config{Resources: []resourceRule{{Kind: abi.ResourceAllocatable, Name: "cpu", Weight: 100}}}

func parseConfig(raw []byte) (config, error) {
	if len(raw) == 0 {
		return defaultConfig, nil
	}
	var c config
	r := jsonlite.NewReader(raw)
	if r.Peek() != jsonlite.Object {
		return c, errors.New("pluginConfig must be a JSON object")
	}
	err := r.Object(func(key string) error {
		var err error
		switch key {
		case "labels":
			c.Labels, err = valueRules(r, key, "key")
		case "claims":
			c.Claims, err = valueRules(r, key, "name")
		case "resources":
			err = r.Array(func(i int) error {
				field := "pluginConfig.resources[" + strconv.Itoa(i) + "]"
				rr := resourceRule{Kind: abi.ResourceAllocatable}
				err := r.Object(func(k string) error {
					var err error
					switch k {
					case "kind":
						var s string
						s, err = r.String()
						rr.Kind = abi.ResourceKind(s)
					case "name":
						rr.Name, err = r.String()
					case "weight":
						rr.Weight, err = r.Int()
					default:
						err = errors.New("unknown field (known: kind, name, weight)")
					}
					return prefix(field+"."+k, err)
				})
				if err != nil {
					return prefix(field, err)
				}
				if rr.Kind != abi.ResourceAllocatable && rr.Kind != abi.ResourceCapacity {
					return errors.New(field + ".kind: " + strconv.Quote(string(rr.Kind)) + " is not Allocatable or Capacity")
				}
				if rr.Name == "" {
					return errors.New(field + ".name: must not be empty")
				}
				if err := checkRange(field+".weight", rr.Weight); err != nil {
					return err
				}
				c.Resources = append(c.Resources, rr)
				return nil
			})
		default:
			return errors.New("pluginConfig: unknown field " + strconv.Quote(key) + " (known: labels, claims, resources)")
		}
		return prefix("pluginConfig."+key, err)
	})
	if err == nil {
		err = r.End()
	}
	if err == nil && len(c.Labels)+len(c.Claims)+len(c.Resources) == 0 {
		err = errors.New("pluginConfig: no rules: give at least one of labels, claims, resources")
	}
	if err == nil {
		_, err = c.inputs()
	}
	return c, err
}

func valueRules(r *jsonlite.Reader, list, keyField string) ([]valueRule, error) {
	var out []valueRule
	err := r.Array(func(i int) error {
		field := "pluginConfig." + list + "[" + strconv.Itoa(i) + "]"
		var v valueRule
		err := r.Object(func(k string) error {
			var err error
			switch k {
			case keyField:
				v.Key, err = r.String()
			case "value":
				v.Value, err = r.String()
			case "score":
				v.Score, err = r.Int()
			default:
				err = errors.New("unknown field (known: " + keyField + ", value, score)")
			}
			return prefix(field+"."+k, err)
		})
		if err != nil {
			return prefix(field, err)
		}
		if v.Key == "" {
			return errors.New(field + "." + keyField + ": must not be empty")
		}
		if err := checkRange(field+".score", v.Score); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

func checkRange(field string, v int64) error {
	if v < abi.MinClusterScore || v > abi.MaxClusterScore {
		return errors.New(field + ": " + strconv.FormatInt(v, 10) + " is outside [-100, 100]")
	}
	return nil
}

// prefix names the field an error belongs to, once.
func prefix(field string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(msg) >= 13 && msg[:13] == "pluginConfig." || len(msg) >= 13 && msg[:13] == "pluginConfig:" {
		return err
	}
	return errors.New(field + ": " + msg)
}

// inputs declares the attributes the rules read, each once.
func (c *config) inputs() (abi.PrioritizerInputs, error) {
	var d abi.PrioritizerInputs
	for _, l := range c.Labels {
		if !contains(d.Labels, l.Key) {
			d.Labels = append(d.Labels, l.Key)
		}
	}
	for _, cl := range c.Claims {
		if !contains(d.Claims, cl.Key) {
			d.Claims = append(d.Claims, cl.Key)
		}
	}
	for _, r := range c.Resources {
		in := abi.ResourceInput{Kind: r.Kind, Name: r.Name}
		dup := false
		for _, e := range d.Resources {
			dup = dup || e == in
		}
		if !dup {
			d.Resources = append(d.Resources, in)
		}
	}
	return d, d.Validate()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

type affinity struct {
	cfg    config
	parsed bool
	// Scratch column, kept across calls of one instance.
	vals []int64
}

func init() { prioritizer.Register(&affinity{}) }

func main() {}

func (a *affinity) config(h sdk.Host) (*config, error) {
	if !a.parsed {
		c, err := parseConfig(h.Config())
		if err != nil {
			return nil, err
		}
		a.cfg, a.parsed = c, true
	}
	return &a.cfg, nil
}

func (a *affinity) ValidateConfig(raw []byte) error {
	_, err := parseConfig(raw)
	return err
}

func (a *affinity) Inputs(h sdk.Host) (abi.PrioritizerInputs, error) {
	c, err := a.config(h)
	if err != nil {
		return abi.PrioritizerInputs{}, err
	}
	return c.inputs()
}

// Score applies each rule in one tight pass over its column: in a Go guest every
// loop iteration is costly, so the rules avoid per-cluster calls and copies.
// Clamping to [-100, 100] happens when the SDK encodes the answer.
func (a *affinity) Score(h sdk.Host, in *abi.ScoreInput, scores []int64) error {
	c, err := a.config(h)
	if err != nil {
		return err
	}
	for _, l := range c.Labels {
		if id, ok := in.StringID(l.Value); ok {
			in.LabelColumn(l.Key).AddWhere(id, l.Score, scores)
		}
	}
	for _, cl := range c.Claims {
		if id, ok := in.StringID(cl.Value); ok {
			in.ClaimColumn(cl.Key).AddWhere(id, cl.Score, scores)
		}
	}
	for _, r := range c.Resources {
		a.addResource(in.ResourceColumn(r.Kind, r.Name), r.Weight, scores)
	}
	return nil
}

func (a *affinity) addResource(col abi.IntColumn, weight int64, scores []int64) {
	if !col.Present() {
		return
	}
	a.vals = col.Values(a.vals)
	lo, hi, seen := int64(math.MaxInt64), int64(math.MinInt64), false
	for _, v := range a.vals {
		if v != abi.NoValue {
			lo, hi, seen = min(lo, v), max(hi, v), true
		}
	}
	if !seen {
		return
	}
	for i, v := range a.vals {
		if v != abi.NoValue {
			scores[i] += ResourceShare(weight, v, lo, hi)
		}
	}
}

// ResourceShare is weight × (v − lo) / (hi − lo), rounded half away from zero;
// weight when hi == lo.
func ResourceShare(weight, v, lo, hi int64) int64 {
	if hi == lo {
		return weight
	}
	x := float64(weight) * (float64(v) - float64(lo)) / (float64(hi) - float64(lo))
	if x < 0 {
		return -int64(-x + 0.5)
	}
	return int64(x + 0.5)
}

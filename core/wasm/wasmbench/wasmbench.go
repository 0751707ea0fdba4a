// Package wasmbench holds the Wasm host benchmarks run by `make bench-wasm`, and
// what they need: a synthetic fleet of typed ManagedClusters, the ClusterSource
// adapter that feeds them to a prioritizer, and a native Go scorer that computes
// exactly what the affinity plugin computes with BenchConfig, so the two can be
// timed on the same data in the same run.
package wasmbench

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// RegionClaim is the claim the benchmark prioritizer reads.
const RegionClaim = "region.open-cluster-management.io"

// BenchConfig configures the affinity plugin to read two labels (env, tier), one
// claim (RegionClaim) and allocatable CPU.
const BenchConfig = `{
  "labels": [{"key": "env", "value": "prod", "score": 30}, {"key": "env", "value": "dev", "score": -20}, {"key": "tier", "value": "gold", "score": 20}],
  "claims": [{"name": "` + RegionClaim + `", "value": "us-east-1", "score": 20}],
  "resources": [{"kind": "Allocatable", "name": "cpu", "weight": 30}]
}`

// Fleet returns n ManagedClusters with realistic labels, claims and resources.
// Quantities are parsed from strings, as they are when decoded from the API server.
func Fleet(n int) []clusterv1.ManagedCluster {
	envs := []string{"prod", "staging", "dev", "prod", "qa"}
	tiers := []string{"gold", "silver", "bronze"}
	regions := []string{"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-south-1", "ap-northeast-1"}
	cpus := []string{"4", "8", "16", "32", "64", "96", "3500m", "128"}
	mems := []string{"16Gi", "32Gi", "64Gi", "128Gi", "256Gi"}
	// Parse each distinct string once; the typed objects share nothing mutable.
	parsed := map[string]resource.Quantity{}
	q := func(s string) resource.Quantity {
		if v, ok := parsed[s]; ok {
			return v.DeepCopy()
		}
		v := resource.MustParse(s)
		parsed[s] = v
		return v.DeepCopy()
	}
	out := make([]clusterv1.ManagedCluster, n)
	rng := uint64(0x9e3779b97f4a7c15)
	next := func(k int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(k))
	}
	for i := range out {
		name := fmt.Sprintf("cluster-%05d", i)
		region := regions[next(len(regions))]
		labels := map[string]string{
			"name": name,
			"cluster.open-cluster-management.io/clusterset": fmt.Sprintf("set-%d", next(10)),
			"vendor": "Kubernetes",
			"feature.open-cluster-management.io/addon-work-manager": "available",
			"region": region,
		}
		// Some clusters lack the labels, claim or resource the plugin reads.
		if next(20) != 0 {
			labels["env"] = envs[next(len(envs))]
		}
		if next(10) != 0 {
			labels["tier"] = tiers[next(len(tiers))]
		}
		claims := []clusterv1.ManagedClusterClaim{
			{Name: "id.k8s.io", Value: name + "-id"},
			{Name: "kubeversion.open-cluster-management.io", Value: "v1.36.3"},
			{Name: "platform.open-cluster-management.io", Value: "AWS"},
			{Name: "product.open-cluster-management.io", Value: "EKS"},
		}
		if next(15) != 0 {
			claims = append(claims, clusterv1.ManagedClusterClaim{Name: RegionClaim, Value: region})
		}
		claims = append(claims, clusterv1.ManagedClusterClaim{Name: "schedulable.open-cluster-management.io", Value: "true"})
		alloc := clusterv1.ResourceList{clusterv1.ResourceMemory: q(mems[next(len(mems))])}
		if next(25) != 0 {
			alloc[clusterv1.ResourceCPU] = q(cpus[next(len(cpus))])
		}
		out[i] = clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: clusterv1.ManagedClusterStatus{
				ClusterClaims: claims,
				Allocatable:   alloc,
				Capacity:      clusterv1.ResourceList{clusterv1.ResourceCPU: q("128"), clusterv1.ResourceMemory: q("512Gi")},
			},
		}
	}
	return out
}

// Milli returns q in milli-units, saturated to int64 (the ABI's resource unit).
func Milli(q *resource.Quantity) int64 { return clusterv1.MilliValue(q) }

// Source is the abi.ClusterSource over typed ManagedClusters that a placement
// scheduler hands to a Wasm prioritizer (add-on scores are not part of this fleet).
type Source []clusterv1.ManagedCluster

func (s Source) Len() int          { return len(s) }
func (s Source) Name(i int) string { return s[i].Name }

func (s Source) Label(i int, key string) (string, bool) {
	v, ok := s[i].Labels[key]
	return v, ok
}

func (s Source) Claim(i int, name string) (string, bool) {
	for _, c := range s[i].Status.ClusterClaims {
		if c.Name == name {
			return c.Value, true
		}
	}
	return "", false
}

func (s Source) Resource(i int, kind abi.ResourceKind, name string) (int64, bool) {
	list := s[i].Status.Allocatable
	if kind == abi.ResourceCapacity {
		list = s[i].Status.Capacity
	}
	q, ok := list[clusterv1.ResourceName(name)]
	if !ok {
		return 0, false
	}
	return Milli(&q), true
}

func (s Source) AddOnScore(int, string, string) (int64, bool) { return 0, false }

// Native scores clusters in plain Go exactly as the affinity plugin does with
// BenchConfig: label and claim matches, then the allocatable-CPU share normalised
// over the candidates that report CPU, then clamping. It reads the same typed
// objects the Wasm path encodes (label map lookups, a claim scan, quantity
// conversion) and writes into scores (len(clusters)); cpu is scratch space.
func Native(clusters []clusterv1.ManagedCluster, scores, cpu []int64) {
	lo, hi, seen := int64(math.MaxInt64), int64(math.MinInt64), false
	for i := range clusters {
		c := &clusters[i]
		var s int64
		switch c.Labels["env"] {
		case "prod":
			s += 30
		case "dev":
			s -= 20
		}
		if c.Labels["tier"] == "gold" {
			s += 20
		}
		for _, cl := range c.Status.ClusterClaims {
			if cl.Name == RegionClaim {
				if cl.Value == "us-east-1" {
					s += 20
				}
				break
			}
		}
		scores[i] = s
		cpu[i] = abi.NoValue
		if q, ok := c.Status.Allocatable[clusterv1.ResourceCPU]; ok {
			v := Milli(&q)
			cpu[i] = v
			lo, hi, seen = min(lo, v), max(hi, v), true
		}
	}
	for i := range clusters {
		if seen && cpu[i] != abi.NoValue {
			scores[i] += resourceShare(30, cpu[i], lo, hi)
		}
		scores[i] = abi.ClampScore(scores[i])
	}
}

// resourceShare matches the affinity plugin's ResourceShare.
func resourceShare(weight, v, lo, hi int64) int64 {
	if hi == lo {
		return weight
	}
	x := float64(weight) * (float64(v) - float64(lo)) / (float64(hi) - float64(lo))
	if x < 0 {
		return -int64(-x + 0.5)
	}
	return int64(x + 0.5)
}

// Command addon-sized is an example AddOnTemplate plugin doing what a fixed
// AddOnTemplate cannot: it sizes an add-on's agent to the managed cluster it runs
// on. From the cluster's allocatable CPU and memory it picks the agent's replica
// count and resource requests; from its ClusterClaims it picks the region the
// agent reports and, on OpenShift (claim product.open-cluster-management.io), leaves
// the user ID to the platform. It renders a ServiceAccount, a ConfigMap and a
// Deployment in the install namespace, plus a feedback rule for the Deployment.
//
// The image is the customizedVariable IMAGE of the add-on's AddOnDeploymentConfig
// (default DefaultImage). The host applies the rest of the AddOnDeploymentConfig
// (node placement, mirrors, proxy, resource overrides) to the output.
package main

import (
	"errors"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/addontemplate"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

const (
	// DefaultImage runs nothing, which is all a simulated cluster needs.
	DefaultImage = "registry.k8s.io/pause:3.10"
	// RegionClaim and ProductClaim are OCM's well-known ClusterClaims.
	RegionClaim  = "region.open-cluster-management.io"
	ProductClaim = "product.open-cluster-management.io"

	mebi = 1 << 20
)

type template struct{}

func init() { addontemplate.Register(template{}) }

func main() {}

// Size is what the plugin decides for a cluster.
type Size struct {
	Replicas   int64
	CPUMilli   int64 // request per replica
	MemoryMebi int64 // request per replica
}

// SizeFor sizes the agent from the cluster's allocatable CPU and memory (milli-units,
// as the host sends them; unknown is 0): one replica below 4 CPUs, two below 16,
// three from there; 1/200 of the CPU per replica within [50m, 500m]; 1/256 of the
// memory within [64Mi, 512Mi].
func SizeFor(cpuMilli, memoryMilli int64) Size {
	s := Size{Replicas: 1}
	switch {
	case cpuMilli >= 16000:
		s.Replicas = 3
	case cpuMilli >= 4000:
		s.Replicas = 2
	}
	s.CPUMilli = clamp(cpuMilli/200, 50, 500)
	s.MemoryMebi = clamp(memoryMilli/1000/256/mebi, 64, 512)
	return s
}

func clamp(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }

func allocatable(req *abi.AddOnRequest, resource string) int64 {
	if v, ok := req.Allocatable(resource); ok {
		return v
	}
	if req.Cluster != nil {
		return req.Cluster.Capacity[resource]
	}
	return 0
}

func (template) RenderAddOn(_ sdk.Host, req *abi.AddOnRequest) (abi.AddOnResult, error) {
	ns := req.InstallNamespace
	if ns == "" {
		return abi.AddOnResult{}, errors.New("installNamespace: must be set")
	}
	image := req.Variables["IMAGE"]
	if image == "" {
		image = DefaultImage
	}
	size := SizeFor(allocatable(req, "cpu"), allocatable(req, "memory"))
	region := req.Claim(RegionClaim)
	if region == "" {
		region = "unknown"
	}
	openShift := req.Claim(ProductClaim) == "OpenShift"
	name := req.AddOnName + "-agent"
	cpu := strconv.FormatInt(size.CPUMilli, 10) + "m"
	memory := strconv.FormatInt(size.MemoryMebi, 10) + "Mi"

	sa := object("v1", "ServiceAccount", name, ns)
	sa.EndObject()

	cm := object("v1", "ConfigMap", name+"-config", ns)
	cm.Key("data")
	cm.BeginObject()
	cm.StringField("CLUSTER_NAME", req.ClusterName)
	cm.StringField("REGION", region)
	if req.Cluster != nil {
		cm.StringField("KUBERNETES_VERSION", req.Cluster.KubernetesVersion)
	}
	cm.StringField("REPLICAS", strconv.FormatInt(size.Replicas, 10))
	cm.EndObject()
	cm.EndObject()

	d := object("apps/v1", "Deployment", name, ns)
	d.Key("spec")
	d.BeginObject()
	d.IntField("replicas", size.Replicas)
	d.Key("selector")
	d.BeginObject()
	d.Key("matchLabels")
	labels(d, name)
	d.EndObject()
	d.Key("template")
	d.BeginObject()
	d.Key("metadata")
	d.BeginObject()
	d.Key("labels")
	labels(d, name)
	d.EndObject()
	d.Key("spec")
	d.BeginObject()
	d.StringField("serviceAccountName", name)
	d.Key("securityContext")
	d.BeginObject()
	d.BoolField("runAsNonRoot", true)
	if !openShift { // OpenShift assigns the user from the namespace's range
		d.IntField("runAsUser", 65532)
	}
	d.EndObject()
	d.Key("containers")
	d.BeginArray()
	d.BeginObject()
	d.StringField("name", "agent")
	d.StringField("image", image)
	d.Key("envFrom")
	d.BeginArray()
	d.BeginObject()
	d.Key("configMapRef")
	d.BeginObject()
	d.StringField("name", name+"-config")
	d.EndObject()
	d.EndObject()
	d.EndArray()
	d.Key("resources")
	d.BeginObject()
	d.Key("requests")
	d.BeginObject()
	d.StringField("cpu", cpu)
	d.StringField("memory", memory)
	d.EndObject()
	d.EndObject()
	d.EndObject()
	d.EndArray()
	d.EndObject()
	d.EndObject()
	d.EndObject()
	d.EndObject()

	return abi.AddOnResult{
		Manifests: []abi.RawJSON{sa.Bytes(), cm.Bytes(), d.Bytes()},
		ManifestConfigs: []abi.RawJSON{addontemplate.JSONPaths("apps", "deployments", ns, name,
			addontemplate.JSONPath{Name: "UpdatedReplicas", Path: ".status.updatedReplicas"})},
	}, nil
}

// object starts an object with apiVersion, kind and metadata, leaving it open.
func object(apiVersion, kind, name, namespace string) *jsonlite.Writer {
	w := jsonlite.NewWriter(nil)
	w.BeginObject()
	w.StringField("apiVersion", apiVersion)
	w.StringField("kind", kind)
	w.Key("metadata")
	w.BeginObject()
	w.StringField("name", name)
	w.StringField("namespace", namespace)
	w.Key("labels")
	labels(w, name)
	w.EndObject()
	return w
}

func labels(w *jsonlite.Writer, name string) {
	w.BeginObject()
	w.StringField("app.kubernetes.io/name", name)
	w.EndObject()
}

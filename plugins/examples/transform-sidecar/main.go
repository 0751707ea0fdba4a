// Command transform-sidecar is an example ManifestTransformer plugin doing what a patch
// cannot compute: it adds (or replaces) a "log-shipper" container in the pod template of
// every workload it is given, sized to the cluster it will run on. Its CPU request is the
// cluster's allocatable CPU / 400 within [20m, 200m], and its env carries CLUSTER (the
// cluster's name) and REGION (the cluster's region.open-cluster-management.io claim, "unknown"
// without one). The image is pluginConfig's "image" (default DefaultImage). Kinds without a
// pod template are left as they are.
//
// It answers an RFC 6902 patch, so it never re-serialises the manifest, and keeps
// encoding/json out of the module (jsonlite reads the manifest and writes the container).
package main

import (
	"errors"
	"strconv"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
	"github.com/flotilla-dev/flotilla/sdk/transformer"
)

const (
	// Container is the name of the container the plugin owns.
	Container = "log-shipper"
	// DefaultImage is the image when pluginConfig names none.
	DefaultImage = "registry.k8s.io/pause:3.10"
	// RegionClaim is OCM's well-known region ClusterClaim.
	RegionClaim = "region.open-cluster-management.io"
)

type sidecar struct{}

func init() { transformer.Register(sidecar{}) }

func main() {}

// podSpecPaths locate the pod spec per kind.
var podSpecPaths = map[string][]string{
	"Pod":         {"spec"},
	"Deployment":  {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
}

// CPUMilli is the container's CPU request for a cluster with allocatable CPU cpu (milli-units,
// 0 when unknown).
func CPUMilli(cpu int64) int64 { return max(20, min(cpu/400, 200)) }

func (sidecar) TransformManifest(h sdk.Host, req *abi.TransformRequest) (abi.TransformResult, error) {
	image, err := imageOf(h.Config())
	if err != nil {
		return abi.TransformResult{}, err
	}
	kind, names, found, err := scan(req.Manifest)
	if err != nil {
		return abi.TransformResult{}, err
	}
	path, ok := podSpecPaths[kind]
	if !ok || !found {
		return transformer.Patch(), nil
	}
	base := ""
	for _, p := range path {
		base += "/" + p
	}
	cpu, _ := req.Allocatable("cpu")
	region := req.Claim(RegionClaim)
	if region == "" {
		region = "unknown"
	}
	c := container(image, CPUMilli(cpu), req.Cluster.Name, region)
	for i, n := range names {
		if n == Container {
			return transformer.Patch(transformer.Replace(base+"/containers/"+strconv.Itoa(i), c)), nil
		}
	}
	return transformer.Patch(transformer.Add(base+"/containers/-", c)), nil
}

// ValidateConfig refuses a pluginConfig whose image is not a non-empty string.
func (sidecar) ValidateConfig(config []byte) error {
	_, err := imageOf(config)
	return err
}

func imageOf(config []byte) (string, error) {
	if len(config) == 0 {
		return DefaultImage, nil
	}
	image := DefaultImage
	r := jsonlite.NewReader(config)
	err := r.Object(func(key string) error {
		if key != "image" {
			return r.Skip()
		}
		s, err := r.String()
		if err == nil && s == "" {
			err = errors.New("is empty")
		}
		if err != nil {
			return errors.New("pluginConfig.image: " + err.Error())
		}
		image = s
		return nil
	})
	return image, err
}

// scan reads the manifest's kind and the names of its pod spec's containers (found: the
// containers list exists).
func scan(manifest []byte) (kind string, names []string, found bool, err error) {
	r := jsonlite.NewReader(manifest)
	var obj []byte
	err = r.Object(func(key string) error {
		var err error
		switch key {
		case "kind":
			kind, err = r.String()
		case "spec":
			obj, err = r.Raw()
			obj = append([]byte("{\"spec\":"), append(obj, '}')...)
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil || obj == nil {
		return kind, nil, false, err
	}
	path, ok := podSpecPaths[kind]
	if !ok {
		return kind, nil, false, nil
	}
	names, found, err = containerNames(jsonlite.NewReader(obj), append(path, "containers"))
	return kind, names, found, err
}

func containerNames(r *jsonlite.Reader, path []string) (names []string, found bool, err error) {
	if len(path) == 0 {
		found = true
		if r.Null() {
			return nil, true, nil
		}
		err = r.Array(func(int) error {
			return r.Object(func(key string) error {
				if key != "name" {
					return r.Skip()
				}
				n, err := r.String()
				names = append(names, n)
				return err
			})
		})
		return names, found, err
	}
	if r.Peek() != jsonlite.Object {
		return nil, false, r.Skip()
	}
	err = r.Object(func(key string) error {
		if key != path[0] || found {
			return r.Skip()
		}
		var err error
		names, found, err = containerNames(r, path[1:])
		return err
	})
	return names, found, err
}

func container(image string, cpuMilli int64, cluster, region string) []byte {
	w := jsonlite.NewWriter(nil)
	w.BeginObject()
	w.StringField("name", Container)
	w.StringField("image", image)
	w.Key("env")
	w.BeginArray()
	for _, e := range [][2]string{{"CLUSTER", cluster}, {"REGION", region}} {
		w.BeginObject()
		w.StringField("name", e[0])
		w.StringField("value", e[1])
		w.EndObject()
	}
	w.EndArray()
	w.Key("resources")
	w.BeginObject()
	w.Key("requests")
	w.BeginObject()
	w.StringField("cpu", strconv.FormatInt(cpuMilli, 10)+"m")
	w.EndObject()
	w.EndObject()
	w.EndObject()
	return w.Bytes()
}

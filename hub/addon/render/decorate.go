package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// decorator applies an add-on's AddOnDeploymentConfig, registrations and variables
// to rendered objects.
type decorator struct {
	addonName  string
	vars       variables
	adc        *addonv1alpha1.AddOnDeploymentConfigSpec
	mounts     []any // volumeMounts added to every container (registrations)
	volumes    []any // volumes added to every pod (registrations)
	registries []addonv1alpha1.ImageMirror
	resources  []resourceRule
	replicas   []replicaRule
	nsOverride string
	// movedFrom are the namespaces objects were moved out of by nsOverride.
	movedFrom map[string]bool
}

type resourceRule struct {
	segments  [3]string // "*" matches any non-empty segment
	resources corev1.ResourceRequirements
}

type replicaRule struct {
	re       *regexp.Regexp
	replicas int32
}

func newDecorator(addonName string, in Input, regs []addonv1alpha1.RegistrationSpec, vars variables, nsOverride string) (*decorator, error) {
	d := &decorator{addonName: addonName, vars: vars, adc: in.DeploymentConfig, nsOverride: nsOverride, movedFrom: map[string]bool{}}
	hubSecret := in.HubKubeconfigSecret
	if hubSecret == "" {
		hubSecret = HubKubeconfigSecretName(addonName)
	}
	for i, r := range regs {
		switch r.Type {
		case addonv1alpha1.RegistrationTypeKubeClient:
			d.addVolume("hub-kubeconfig", HubKubeconfigMountPath, map[string]any{"secret": map[string]any{"secretName": hubSecret}})
		case addonv1alpha1.RegistrationTypeCustomSigner:
			if r.CustomSigner == nil {
				return nil, fmt.Errorf("registration[%d]: customSigner must be set for type CustomSigner", i)
			}
			signer := r.CustomSigner.SignerName
			name := "cert-" + strings.ReplaceAll(strings.ReplaceAll(signer, "/", "-"), ".", "-")
			d.addVolume(name, "/managed/"+strings.ReplaceAll(signer, "/", "-"),
				map[string]any{"secret": map[string]any{"secretName": CustomSignedSecretName(addonName, signer)}})
		}
	}

	adc := in.DeploymentConfig
	if adc != nil && adc.Registries != nil {
		d.registries = adc.Registries
	} else if in.Cluster != nil {
		if v := in.Cluster.Annotations[clusterv1.ClusterImageRegistriesAnnotationKey]; v != "" {
			var ann struct {
				Registries []addonv1alpha1.ImageMirror `json:"registries"`
			}
			if err := json.Unmarshal([]byte(v), &ann); err != nil {
				return nil, fmt.Errorf("ManagedCluster %s: annotation %s: %v", in.Cluster.Name, clusterv1.ClusterImageRegistriesAnnotationKey, err)
			}
			d.registries = ann.Registries
		}
	}
	if adc == nil {
		return d, nil
	}
	for i, rr := range adc.ResourceRequirements {
		parts := strings.Split(rr.ContainerID, ":")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("AddOnDeploymentConfig resourceRequirements[%d]: invalid containerID %q, want <resource type>:<name>:<container>", i, rr.ContainerID)
		}
		d.resources = append(d.resources, resourceRule{segments: [3]string{parts[0], parts[1], parts[2]}, resources: rr.Resources})
	}
	for i, rc := range adc.ReplicaConfigs {
		if !workloadIDPattern.MatchString(rc.WorkloadID) {
			return nil, fmt.Errorf("AddOnDeploymentConfig replicaConfigs[%d]: invalid workloadID %q, want <deployments|statefulsets>:<name>", i, rc.WorkloadID)
		}
		if rc.Replicas < 0 {
			return nil, fmt.Errorf("AddOnDeploymentConfig replicaConfigs[%d]: replicas %d is negative", i, rc.Replicas)
		}
		pattern := "^" + strings.ReplaceAll(regexp.QuoteMeta(rc.WorkloadID), `\*`, ".*") + "$"
		d.replicas = append(d.replicas, replicaRule{re: regexp.MustCompile(pattern), replicas: rc.Replicas})
	}
	return d, nil
}

var workloadIDPattern = regexp.MustCompile(`^(deployments|statefulsets|\*):.+$`)

func (d *decorator) addVolume(name, mountPath string, source map[string]any) {
	d.mounts = append(d.mounts, map[string]any{"name": name, "mountPath": mountPath})
	vol := map[string]any{"name": name}
	for k, v := range source {
		vol[k] = v
	}
	d.volumes = append(d.volumes, vol)
}

// finish decorates objs in place, appends the objects the configuration adds and
// encodes them all.
func (d *decorator) finish(objs []object) (Rendered, error) {
	var out Rendered
	for _, o := range objs {
		if err := d.decorate(o); err != nil {
			return out, fmt.Errorf("%s: %w", o.describe(), err)
		}
	}
	if d.adc != nil && len(d.adc.ProxyConfig.CABundle) > 0 {
		cm := object{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": ProxyCABundleConfigMapName(d.addonName), "namespace": DefaultInstallNamespace},
			"data":       map[string]any{ProxyCABundleKey: string(d.adc.ProxyConfig.CABundle)},
		}
		d.moveNamespace(cm)
		objs = append(objs, cm)
	}
	for _, o := range objs {
		raw, err := o.encode()
		if err != nil {
			return out, fmt.Errorf("%s: %w", o.describe(), err)
		}
		out.Manifests = append(out.Manifests, workv1.Manifest{})
		out.Manifests[len(out.Manifests)-1].Raw = raw
	}
	return out, nil
}

// workloadResource is the ADC resource type of the workloads whose pods are
// decorated, "" for other objects.
func workloadResource(o object) string {
	switch o.group() + "/" + o.kind() {
	case "apps/Deployment":
		return "deployments"
	case "apps/DaemonSet":
		return "daemonsets"
	case "apps/StatefulSet":
		return "statefulsets"
	case "batch/Job":
		return "jobs"
	}
	return ""
}

func (d *decorator) decorate(o object) error {
	if res := workloadResource(o); res != "" {
		if err := d.decorateWorkload(o, res); err != nil {
			return err
		}
	}
	d.moveNamespace(o)
	return nil
}

// moveNamespace is OCM's namespace decorator.
func (d *decorator) moveNamespace(o object) {
	ns := d.nsOverride
	if ns == "" {
		return
	}
	md := o.metadata()
	if old := o.namespace(); old != "" {
		d.movedFrom[old] = true
		md["namespace"] = ns
	}
	switch o.kind() {
	case "ClusterRoleBinding", "RoleBinding":
		subjects, _ := o["subjects"].([]any)
		for _, s := range subjects {
			if sm, ok := s.(map[string]any); ok {
				sm["namespace"] = ns
			}
		}
	case "Namespace":
		if md != nil {
			md["name"] = ns
		}
	}
}

// followNamespaces points manifestConfigs at the namespace their resources moved to.
func (d *decorator) followNamespaces(configs []workv1.ManifestConfigOption) []workv1.ManifestConfigOption {
	for i := range configs {
		if ns := configs[i].ResourceIdentifier.Namespace; ns != "" && d.movedFrom[ns] {
			configs[i].ResourceIdentifier.Namespace = d.nsOverride
		}
	}
	return configs
}

func (d *decorator) decorateWorkload(o object, resource string) error {
	name := o.name()
	pod, err := podSpec(o, false)
	if err != nil {
		return err
	}
	var containers, initContainers []map[string]any
	if pod != nil {
		if containers, err = list(pod, "containers"); err != nil {
			return err
		}
		if initContainers, err = list(pod, "initContainers"); err != nil {
			return err
		}
	}
	needPod := len(d.volumes) > 0
	var caBundle bool
	var proxyEnv []envVar
	if d.adc != nil {
		np := d.adc.NodePlacement
		needPod = needPod || (np != nil && (np.NodeSelector != nil || np.Tolerations != nil))
		pc := d.adc.ProxyConfig
		for _, p := range []struct{ upper, lower, value string }{
			{"HTTP_PROXY", "http_proxy", pc.HTTPProxy}, {"HTTPS_PROXY", "https_proxy", pc.HTTPSProxy}, {"NO_PROXY", "no_proxy", pc.NoProxy},
		} {
			if p.value != "" {
				proxyEnv = append(proxyEnv, envVar{p.upper, p.value}, envVar{p.lower, p.value})
			}
		}
		// OCM mounts the CA bundle only along with proxy variables.
		caBundle = len(proxyEnv) > 0 && len(pc.CABundle) > 0
		needPod = needPod || caBundle
	}
	if pod == nil && needPod {
		if pod, err = podSpec(o, true); err != nil {
			return err
		}
	}

	// The order is OCM's: variables, registration volumes, node placement, images,
	// proxy, resources; then replicas.
	for _, c := range containers {
		if err := appendEnv(c, d.vars.env); err != nil {
			return err
		}
	}
	if len(d.volumes) > 0 {
		for i, c := range containers {
			if err := appendNamed(c, "volumeMounts", containerPath(i), d.mounts); err != nil {
				return err
			}
		}
		if err := appendNamed(pod, "volumes", podSpecPath, d.volumes); err != nil {
			return err
		}
	}
	if d.adc != nil && d.adc.NodePlacement != nil {
		np := d.adc.NodePlacement
		if np.NodeSelector != nil {
			sel := map[string]any{}
			for k, v := range np.NodeSelector {
				sel[k] = v
			}
			pod["nodeSelector"] = sel
		}
		if np.Tolerations != nil {
			pod["tolerations"] = toUnstructured(np.Tolerations)
		}
	}
	if len(d.registries) > 0 {
		for _, c := range append(initContainers, containers...) {
			if image, ok := c["image"].(string); ok {
				c["image"] = OverrideImage(d.registries, image)
			}
		}
	}
	if len(proxyEnv) > 0 {
		for _, c := range containers {
			if err := appendEnv(c, proxyEnv); err != nil {
				return err
			}
		}
		if caBundle {
			caEnv := []envVar{{"CA_BUNDLE_FILE_PATH", ProxyCABundleMountPath + "/" + ProxyCABundleKey}}
			mount := []any{map[string]any{"name": "proxy-ca-bundle", "mountPath": ProxyCABundleMountPath}}
			for i, c := range containers {
				if err := appendEnv(c, caEnv); err != nil {
					return err
				}
				if err := appendNamed(c, "volumeMounts", containerPath(i), mount); err != nil {
					return err
				}
			}
			vol := []any{map[string]any{"name": "proxy-ca-bundle", "configMap": map[string]any{"name": ProxyCABundleConfigMapName(d.addonName)}}}
			if err := appendNamed(pod, "volumes", podSpecPath, vol); err != nil {
				return err
			}
		}
	}
	if len(d.resources) > 0 {
		for _, c := range containers {
			cname, _ := c["name"].(string)
			for j := len(d.resources) - 1; j >= 0; j-- { // the last match wins
				if d.resources[j].matches(resource, name, cname) {
					c["resources"] = toUnstructured(d.resources[j].resources)
					break
				}
			}
		}
	}
	if resource == "deployments" || resource == "statefulsets" {
		id := resource + ":" + name
		for j := len(d.replicas) - 1; j >= 0; j-- {
			if d.replicas[j].re.MatchString(id) {
				spec, err := child(o, "spec", true)
				if err != nil {
					return err
				}
				spec["replicas"] = json.Number(strconv.Itoa(int(d.replicas[j].replicas)))
				break
			}
		}
	}
	return nil
}

func (r resourceRule) matches(parts ...string) bool {
	for i, p := range parts {
		if r.segments[i] != "*" && r.segments[i] != p {
			return false
		}
		if r.segments[i] == "*" && p == "" {
			return false
		}
	}
	return true
}

// OverrideImage rewrites image with registries as OCM's addonfactory.OverrideImage:
// each entry whose source prefixes the image yields the mirror followed by the rest
// of the image (an empty source matches every image and keeps only its last path
// segment); the last entry that changes the image wins.
func OverrideImage(registries []addonv1alpha1.ImageMirror, image string) string {
	out := image
	for _, r := range registries {
		if name := overrideImage(r.Source, r.Mirror, image); name != image {
			out = name
		}
	}
	return out
}

func overrideImage(source, mirror, image string) string {
	source = strings.TrimSuffix(source, "/")
	mirror = strings.TrimSuffix(mirror, "/")
	if source == "" {
		last := image[strings.LastIndex(image, "/")+1:]
		if mirror == "" {
			return last
		}
		return mirror + "/" + last
	}
	if !strings.HasPrefix(image, source) {
		return image
	}
	return mirror + strings.TrimPrefix(image, source)
}

// coerceReplicas turns a string spec.replicas of an apps/v1 Deployment or
// StatefulSet (a "{{replicas}}" variable) into a number, as OCM does.
func coerceReplicas(o object) {
	if o.apiVersion() != "apps/v1" || (o.kind() != "Deployment" && o.kind() != "StatefulSet") {
		return
	}
	spec, _ := o["spec"].(map[string]any)
	if s, ok := spec["replicas"].(string); ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			spec["replicas"] = json.Number(strconv.FormatInt(n, 10))
		}
	}
}

// podSpec returns spec.template.spec, creating the path when create is set.
func podSpec(o object, create bool) (map[string]any, error) {
	m := map[string]any(o)
	for _, k := range []string{"spec", "template", "spec"} {
		next, err := child(m, k, create)
		if err != nil || next == nil {
			return nil, err
		}
		m = next
	}
	return m, nil
}

func child(m map[string]any, key string, create bool) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		if !create {
			return nil, nil
		}
		c := map[string]any{}
		m[key] = c
		return c, nil
	}
	c, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	return c, nil
}

func list(m map[string]any, key string) ([]map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", key)
	}
	out := make([]map[string]any, 0, len(items))
	for i, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is not an object", key, i)
		}
		out = append(out, im)
	}
	return out, nil
}

func appendEnv(c map[string]any, env []envVar) error {
	if len(env) == 0 {
		return nil
	}
	cur, ok := c["env"].([]any)
	if !ok && c["env"] != nil {
		return errors.New("container env is not a list")
	}
	for _, e := range env {
		cur = append(cur, map[string]any{"name": e.name, "value": e.value})
	}
	c["env"] = cur
	return nil
}

// podSpecPath is where podSpec finds the pod spec of a workload.
const podSpecPath = "spec.template.spec"

// containerPath is the field path of the pod spec's i-th container.
func containerPath(i int) string { return fmt.Sprintf("%s.containers[%d]", podSpecPath, i) }

// appendNamed appends the named items to m[key] (at field path path), skipping names already
// there. A name the manifest gives that is not a string (a list, an object) is an error naming
// the field: it could not be compared, let alone be valid.
func appendNamed(m map[string]any, key, path string, items []any) error {
	cur, ok := m[key].([]any)
	if !ok && m[key] != nil {
		return fmt.Errorf("%s.%s is not a list", path, key)
	}
	have := map[string]bool{}
	for i, it := range cur {
		im, ok := it.(map[string]any)
		if !ok {
			continue
		}
		switch name := im["name"].(type) {
		case string:
			have[name] = true
		case nil:
		default:
			return fmt.Errorf("%s.%s[%d].name: want a string, not %s", path, key, i, jsonKind(name))
		}
	}
	for _, it := range items {
		if name, _ := it.(map[string]any)["name"].(string); !have[name] {
			cur = append(cur, deepCopyJSON(it))
		}
	}
	m[key] = cur
	return nil
}

// jsonKind names the JSON type of a decoded value, for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case bool:
		return "a boolean"
	case json.Number, float64, int64, int:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// toUnstructured converts a typed value to its JSON form (maps, slices, strings,
// json.Number).
func toUnstructured(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // API types always marshal
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopyJSON(e)
		}
		return s
	}
	return v
}

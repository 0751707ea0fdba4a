// Package render turns an add-on's definition into the ManifestWorks that deploy
// its agent on one managed cluster, without touching any API server: it renders an
// AddOnTemplate (or calls an AddOnTemplate Wasm plugin), applies the
// AddOnDeploymentConfig the way OCM's template add-on manager does, splits the
// result into ManifestWorks named as OCM names them, and computes the add-on's
// Available condition from those works' status.
//
// Template follows OCM's addon-manager (pkg/addon/templateagent and the
// addon-framework's agentdeploy controller); deliberate differences are listed in
// the doc comments of the functions that make them.
package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
)

// Built-in template variables.
const (
	// VarClusterName is the managed cluster's name; it cannot be overridden.
	VarClusterName = "CLUSTER_NAME"
	// VarInstallNamespace is the AddOnDeploymentConfig's agentInstallNamespace (for
	// templates only when it is set); it cannot be overridden.
	VarInstallNamespace = "INSTALL_NAMESPACE"
	// VarHubKubeconfig is HubKubeconfigPath when the add-on registers with the hub;
	// a customizedVariable of the same name overrides it.
	VarHubKubeconfig = "HUB_KUBECONFIG"
)

// Paths and names of what the decorators add to agent workloads, as in OCM.
const (
	// HubKubeconfigPath is the hub kubeconfig file inside agent containers.
	HubKubeconfigPath = "/managed/hub-kubeconfig/kubeconfig"
	// HubKubeconfigMountPath is where the hub kubeconfig Secret is mounted.
	HubKubeconfigMountPath = "/managed/hub-kubeconfig"
	// ProxyCABundleMountPath is where the proxy CA ConfigMap is mounted.
	ProxyCABundleMountPath = "/managed/proxy-ca"
	// ProxyCABundleKey is the ConfigMap key of the proxy CA bundle.
	ProxyCABundleKey = "ca-bundle.crt"
	// DefaultInstallNamespace is OCM's default agent namespace.
	DefaultInstallNamespace = "open-cluster-management-agent-addon"
)

// HubKubeconfigSecretName is the Secret, in the agent's namespace, holding the
// agent's hub kubeconfig: "<addon>-hub-kubeconfig".
func HubKubeconfigSecretName(addonName string) string { return addonName + "-hub-kubeconfig" }

// CustomSignedSecretName is the Secret holding a CustomSigner registration's
// certificate: "<addon>-<signer with / replaced by ->-client-cert".
func CustomSignedSecretName(addonName, signerName string) string {
	return addonName + "-" + strings.ReplaceAll(signerName, "/", "-") + "-client-cert"
}

// ProxyCABundleConfigMapName is the ConfigMap carrying the proxy CA bundle.
func ProxyCABundleConfigMapName(addonName string) string { return addonName + "-proxy-ca" }

// Input is everything rendering needs for one add-on on one cluster.
type Input struct {
	// AddOnName is the add-on (ClusterManagementAddOn) name.
	AddOnName string
	// Cluster is the managed cluster: name, labels, annotations (image registries),
	// status.clusterClaims, version, capacity and allocatable. Required.
	Cluster *clusterv1.ManagedCluster
	// InstallNamespace is where the agent is installed, as the caller resolved it
	// (the AddOnDeploymentConfig's agentInstallNamespace, else the
	// ManagedClusterAddOn's spec.installNamespace, else DefaultInstallNamespace).
	// Wasm uses it; Template ignores it and follows OCM (see Rendered.InstallNamespace).
	InstallNamespace string
	// DeploymentConfig is the spec of the resolved AddOnDeploymentConfig, nil if none.
	DeploymentConfig *addonv1alpha1.AddOnDeploymentConfigSpec
	// Configs are the resolved configurations, in order (Wasm passes them to the
	// plugin, AddOnDeploymentConfigs excepted; Template does not use them).
	Configs []Config
	// HubKubeconfigSecret is the agent's hub kubeconfig Secret; empty means
	// HubKubeconfigSecretName(AddOnName).
	HubKubeconfigSecret string
	// Registration says the add-on declares a KubeClient registration (its agent
	// gets a hub kubeconfig). Wasm uses it; Template reads the template's own
	// spec.registration.
	Registration bool
}

// Config is one resolved configuration object of an add-on.
type Config struct {
	Group, Resource, Namespace, Name string
	// Object is the whole object as JSON.
	Object json.RawMessage
}

// Rendered is an add-on's agent, ready to be put in ManifestWorks.
type Rendered struct {
	// Manifests are the objects to deploy, in order, each compact JSON.
	Manifests []workv1.Manifest
	// ManifestConfigs are the manifest configurations of the add-on (the template's
	// agentSpec.manifestConfigs, or the plugin's).
	ManifestConfigs []workv1.ManifestConfigOption
	// DeleteOption and Executor are the template's agentSpec.deleteOption and
	// agentSpec.executor, nil when absent.
	DeleteOption *workv1.DeleteOption
	Executor     *workv1.ManifestWorkExecutor
	// InstallNamespace is the agent's namespace, where registration Secrets go. For
	// a template it is OCM's: the AddOnDeploymentConfig's agentInstallNamespace,
	// else the namespace of the first Deployment, else of the first DaemonSet,
	// else DefaultInstallNamespace. For a plugin it is Input.InstallNamespace.
	InstallNamespace string
}

// privateKeys are value names OCM reserves for its decorators; customizedVariables
// of these names are not template variables.
var privateKeys = map[string]bool{
	"__NODE_PLACEMENT": true, "__REGISTRIES": true, "__INSTALL_NAMESPACE": true,
	"__PROXY": true, "__RESOURCE_REQUIREMENTS": true, "__REPLICAS": true,
}

// variables are the template variables and, in order, those also injected as
// environment variables into agent containers.
type variables struct {
	values map[string]string
	env    []envVar
}

type envVar struct{ name, value string }

// newVariables merges, as OCM does: HUB_KUBECONFIG (when registered) < the
// AddOnDeploymentConfig's customizedVariables < CLUSTER_NAME and INSTALL_NAMESPACE
// (when non-empty). The injected environment is HUB_KUBECONFIG (when registered)
// followed by the built-ins present, with their final values.
func newVariables(adc *addonv1alpha1.AddOnDeploymentConfigSpec, clusterName, installNamespace string, registered bool) variables {
	v := variables{values: map[string]string{}}
	var defaults, builtins []string
	if registered {
		v.values[VarHubKubeconfig] = HubKubeconfigPath
		defaults = append(defaults, VarHubKubeconfig)
	}
	if adc != nil {
		for _, cv := range adc.CustomizedVariables {
			if !privateKeys[cv.Name] {
				v.values[cv.Name] = cv.Value
			}
		}
	}
	if clusterName != "" {
		v.values[VarClusterName] = clusterName
		builtins = append(builtins, VarClusterName)
	}
	if installNamespace != "" {
		v.values[VarInstallNamespace] = installNamespace
		builtins = append(builtins, VarInstallNamespace)
	}
	for _, k := range append(defaults, builtins...) {
		v.env = append(v.env, envVar{k, v.values[k]})
	}
	return v
}

// substitute replaces every {{name}} in s by the variable name, as OCM's
// fasttemplate does: the name is the exact text between the tags (no trimming),
// unknown names become the empty string, and values are inserted verbatim.
func substitute(s string, values map[string]string) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		j := strings.Index(s, "}}")
		if j < 0 {
			return "", errors.New(`"{{" without a closing "}}"`)
		}
		b.WriteString(values[s[:j]])
		s = s[j+2:]
	}
}

// object is a decoded manifest. Numbers are json.Number, so they survive a round
// trip unchanged.
type object map[string]any

func decodeObject(raw []byte) (object, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("unexpected data after the object")
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

func (o object) encode() ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(map[string]any(o)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (o object) str(key string) string { s, _ := o[key].(string); return s }

func (o object) apiVersion() string { return o.str("apiVersion") }
func (o object) kind() string       { return o.str("kind") }
func (o object) group() string {
	gv, _ := schema.ParseGroupVersion(o.apiVersion())
	return gv.Group
}

func (o object) metadata() map[string]any { m, _ := o["metadata"].(map[string]any); return m }

func (o object) name() string { s, _ := o.metadata()["name"].(string); return s }

func (o object) namespace() string { s, _ := o.metadata()["namespace"].(string); return s }

func (o object) labels() map[string]any { m, _ := o.metadata()["labels"].(map[string]any); return m }

func (o object) annotations() map[string]any {
	m, _ := o.metadata()["annotations"].(map[string]any)
	return m
}

// resource is the object's plural resource, guessed from its kind as OCM does.
func (o object) resource() string {
	gv, _ := schema.ParseGroupVersion(o.apiVersion())
	plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(o.kind()))
	return plural.Resource
}

func (o object) identifier() workv1.ResourceIdentifier {
	return workv1.ResourceIdentifier{Group: o.group(), Resource: o.resource(), Namespace: o.namespace(), Name: o.name()}
}

func (o object) describe() string {
	if ns := o.namespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", o.kind(), ns, o.name())
	}
	return fmt.Sprintf("%s %s", o.kind(), o.name())
}

// checkIdentity requires apiVersion, kind and metadata.name.
func (o object) checkIdentity() error {
	switch {
	case o.apiVersion() == "":
		return errors.New("apiVersion: must be set")
	case o.kind() == "":
		return errors.New("kind: must be set")
	case o.name() == "":
		return errors.New("metadata.name: must be set")
	}
	if md, ok := o["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return errors.New("metadata: not an object")
		}
	}
	return nil
}

// Template renders an AddOnTemplate for one cluster as OCM's template add-on
// manager does:
//
//   - variables: {{CLUSTER_NAME}}, {{INSTALL_NAMESPACE}} (the AddOnDeploymentConfig's
//     agentInstallNamespace; empty without one), {{HUB_KUBECONFIG}}
//     (HubKubeconfigPath when spec.registration is set) and the
//     AddOnDeploymentConfig's customizedVariables, which override HUB_KUBECONFIG but
//     not the other two; unknown variables render empty; string spec.replicas of
//     apps/v1 Deployments and StatefulSets become integers;
//   - every container of Deployments, DaemonSets, StatefulSets and Jobs gets the
//     built-in variables as environment variables, the hub kubeconfig (KubeClient
//     registration) and custom-signer certificate volumes, the proxy settings (and
//     the CA bundle, shipped in an added ConfigMap), its resource requirements;
//     pods get the node placement, images the registry mirrors (the
//     AddOnDeploymentConfig's, else those of the cluster's
//     open-cluster-management.io/image-registries annotation); Deployments and
//     StatefulSets get replicaConfigs;
//   - with an agentInstallNamespace, every namespaced object moves there, as do
//     the subjects of (Cluster)RoleBindings and Namespace objects.
//
// Differences from OCM: StatefulSets and Jobs are decorated too (OCM: Deployments
// and DaemonSets); tolerations apply without a nodeSelector (OCM needs one);
// mirrors also rewrite init containers; a volume or mount the template already
// defines under the same name is not added twice; manifestConfigs follow their
// resources into the install namespace (OCM leaves them pointing at the old one).
// in.InstallNamespace and in.Registration are not used.
func Template(t *addonv1alpha1.AddOnTemplate, in Input) (Rendered, error) {
	if t == nil {
		return Rendered{}, errors.New("no AddOnTemplate")
	}
	if in.Cluster == nil {
		return Rendered{}, errors.New("no managed cluster")
	}
	addonName := in.AddOnName
	if addonName == "" {
		addonName = t.Spec.AddonName
	}
	adc := in.DeploymentConfig
	nsOverride := ""
	if adc != nil {
		nsOverride = adc.AgentInstallNamespace
	}
	vars := newVariables(adc, in.Cluster.Name, nsOverride, t.Spec.Registration != nil)
	d, err := newDecorator(addonName, in, t.Spec.Registration, vars, nsOverride)
	if err != nil {
		return Rendered{}, err
	}

	var objs []object
	for i, m := range t.Spec.AgentSpec.Workload.Manifests {
		o, err := renderManifest(m.Raw, vars.values)
		if err != nil {
			return Rendered{}, fmt.Errorf("AddOnTemplate %s: agentSpec.workload.manifests[%d]: %w", t.Name, i, err)
		}
		objs = append(objs, o)
	}
	out, err := d.finish(objs)
	if err != nil {
		return Rendered{}, fmt.Errorf("add-on %s: AddOnTemplate %s: %w", addonName, t.Name, err)
	}
	out.ManifestConfigs = d.followNamespaces(deepCopyConfigs(t.Spec.AgentSpec.ManifestConfigs))
	out.DeleteOption = t.Spec.AgentSpec.DeleteOption.DeepCopy()
	out.Executor = t.Spec.AgentSpec.Executor.DeepCopy()
	out.InstallNamespace = templateInstallNamespace(objs, nsOverride)
	return out, nil
}

func renderManifest(raw []byte, values map[string]string) (object, error) {
	s, err := substitute(string(raw), values)
	if err != nil {
		return nil, err
	}
	o, err := decodeObject([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("after substituting variables: %w", err)
	}
	if err := o.checkIdentity(); err != nil {
		return nil, err
	}
	coerceReplicas(o)
	return o, nil
}

// templateInstallNamespace is OCM's registration namespace of a template add-on,
// from the manifests as rendered before the namespace override.
func templateInstallNamespace(objs []object, override string) string {
	if override != "" {
		return override
	}
	for _, kind := range []string{"Deployment", "DaemonSet"} {
		for _, o := range objs {
			if o.group() == "apps" && o.kind() == kind && o.namespace() != "" {
				return o.namespace()
			}
		}
	}
	return DefaultInstallNamespace
}

func deepCopyConfigs(in []workv1.ManifestConfigOption) []workv1.ManifestConfigOption {
	if in == nil {
		return nil
	}
	out := make([]workv1.ManifestConfigOption, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// sortedStrings returns the keys of m in order.
func sortedStrings[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

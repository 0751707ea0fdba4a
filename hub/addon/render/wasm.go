package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/wasm"
	"github.com/flotilla-dev/flotilla/sdk/abi"
)

// Wasm renders an add-on with the AddOnTemplate WasmPlugin plugin: it sends the
// plugin the add-on, the cluster (name, labels, claims, Kubernetes version,
// capacity and allocatable in milli-units), in.InstallNamespace, the
// AddOnDeploymentConfig spec (request field config), the other configurations
// (in.Configs except AddOnDeploymentConfigs) and
// the variables a template would see (customizedVariables, CLUSTER_NAME,
// INSTALL_NAMESPACE = in.InstallNamespace and, with in.Registration,
// HUB_KUBECONFIG), checks the answer and decorates it exactly as Template
// decorates an AddOnTemplate's manifests (in.Registration standing for a KubeClient
// registration).
//
// The plugin's answer is refused, with a *wasm.CallError of kind InvalidOutput
// naming the plugin and the offending manifest, when a manifest is not a JSON
// object with apiVersion, kind and metadata.name, a namespace is not a DNS label,
// a well-known namespaced kind (Deployment, ConfigMap, Role, …) has no namespace
// or a well-known cluster-scoped kind (Namespace, ClusterRole, CRD, …) has one, two
// manifests are the same object, or a manifestConfig is not a valid
// ManifestConfigOption. Failed calls (not loaded, trap, timeout, memory, guest
// error) are returned as the registry reports them, which names the plugin too,
// wrapped with the add-on and cluster.
func Wasm(ctx context.Context, reg *wasm.Registry, plugin string, in Input) (Rendered, error) {
	if reg == nil {
		return Rendered{}, errors.New("no wasm plugin registry")
	}
	if m, ok := reg.Get(plugin); ok && m.Type() != abi.TypeAddOnTemplate {
		return Rendered{}, fmt.Errorf("wasm plugin %q is of type %s, not %s", plugin, m.Type(), abi.TypeAddOnTemplate)
	}
	return renderWasm(in, plugin, func(input []byte) ([]byte, error) {
		return reg.Call(ctx, plugin, abi.ExportRenderAddOn, input)
	})
}

func renderWasm(in Input, plugin string, call func([]byte) ([]byte, error)) (Rendered, error) {
	if in.Cluster == nil {
		return Rendered{}, errors.New("no managed cluster")
	}
	adc := in.DeploymentConfig
	vars := newVariables(adc, in.Cluster.Name, in.InstallNamespace, in.Registration)
	req, err := request(in, vars.values)
	if err != nil {
		return Rendered{}, err
	}
	out, err := call(req.AppendJSON(nil))
	if err != nil {
		return Rendered{}, fmt.Errorf("rendering add-on %s for cluster %s: %w", in.AddOnName, in.Cluster.Name, err)
	}
	invalid := func(err error) error {
		return fmt.Errorf("rendering add-on %s for cluster %s: %w", in.AddOnName, in.Cluster.Name,
			wasm.InvalidOutput(plugin, abi.ExportRenderAddOn, err, "%v", err))
	}
	var res abi.AddOnResult
	if err := res.DecodeJSON(out); err != nil {
		return Rendered{}, invalid(err)
	}
	objs, configs, err := checkResult(&res)
	if err != nil {
		return Rendered{}, invalid(err)
	}

	var regs []addonv1alpha1.RegistrationSpec
	if in.Registration {
		regs = []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient}}
	}
	nsOverride := ""
	if adc != nil {
		nsOverride = adc.AgentInstallNamespace
	}
	d, err := newDecorator(in.AddOnName, in, regs, vars, nsOverride)
	if err != nil {
		return Rendered{}, err
	}
	rendered, err := d.finish(objs)
	if err != nil {
		return Rendered{}, fmt.Errorf("wasm plugin %q: add-on %s: %w", plugin, in.AddOnName, err)
	}
	rendered.ManifestConfigs = d.followNamespaces(configs)
	rendered.InstallNamespace = in.InstallNamespace
	return rendered, nil
}

// request is the render_addon input Wasm sends for in, with the given variables.
func request(in Input, variables map[string]string) (abi.AddOnRequest, error) {
	req := abi.AddOnRequest{
		AddOnName:        in.AddOnName,
		InstallNamespace: in.InstallNamespace,
		Variables:        variables,
	}
	if req.Variables == nil {
		req.Variables = map[string]string{}
	}
	if in.DeploymentConfig != nil {
		raw, err := json.Marshal(in.DeploymentConfig)
		if err != nil {
			return req, err
		}
		req.Config = raw
	}
	if in.Registration {
		req.HubKubeconfigSecret = in.HubKubeconfigSecret
		if req.HubKubeconfigSecret == "" {
			req.HubKubeconfigSecret = HubKubeconfigSecretName(in.AddOnName)
		}
	}
	if c := in.Cluster; c != nil {
		req.ClusterName = c.Name
		ac := &abi.AddOnCluster{Name: c.Name, KubernetesVersion: c.Status.Version.Kubernetes}
		if len(c.Labels) > 0 {
			ac.Labels = map[string]string{}
			for k, v := range c.Labels {
				ac.Labels[k] = v
			}
		}
		for _, cl := range c.Status.ClusterClaims {
			if ac.Claims == nil {
				ac.Claims = map[string]string{}
			}
			ac.Claims[cl.Name] = cl.Value
		}
		ac.Capacity = milli(c.Status.Capacity)
		ac.Allocatable = milli(c.Status.Allocatable)
		req.Cluster = ac
	}
	for _, cfg := range in.Configs {
		if cfg.Group == addonv1alpha1.GroupVersion.Group && cfg.Resource == "addondeploymentconfigs" {
			continue // sent as config
		}
		var obj abi.RawJSON
		if len(cfg.Object) > 0 {
			var buf bytes.Buffer
			if err := json.Compact(&buf, cfg.Object); err != nil {
				return req, fmt.Errorf("config %s/%s %s/%s: %w", cfg.Group, cfg.Resource, cfg.Namespace, cfg.Name, err)
			}
			obj = buf.Bytes()
		}
		req.Configs = append(req.Configs, abi.AddOnConfig{Group: cfg.Group, Resource: cfg.Resource, Namespace: cfg.Namespace, Name: cfg.Name, Object: obj})
	}
	return req, nil
}

func milli(rl clusterv1.ResourceList) map[string]int64 {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]int64, len(rl))
	for name, q := range rl {
		out[string(name)] = clusterv1.MilliValue(&q)
	}
	return out
}

// Well-known kinds, by "group/kind", and whether they are namespaced.
var knownScope = map[string]bool{
	"/ConfigMap": true, "/Secret": true, "/ServiceAccount": true, "/Service": true, "/Pod": true,
	"/PersistentVolumeClaim": true, "/Endpoints": true, "/LimitRange": true, "/ResourceQuota": true,
	"apps/Deployment": true, "apps/DaemonSet": true, "apps/StatefulSet": true, "apps/ReplicaSet": true,
	"batch/Job": true, "batch/CronJob": true, "rbac.authorization.k8s.io/Role": true,
	"rbac.authorization.k8s.io/RoleBinding": true, "policy/PodDisruptionBudget": true,
	"networking.k8s.io/NetworkPolicy": true, "networking.k8s.io/Ingress": true,
	"autoscaling/HorizontalPodAutoscaler": true, "coordination.k8s.io/Lease": true,

	"/Namespace": false, "/PersistentVolume": false, "/Node": false,
	"rbac.authorization.k8s.io/ClusterRole": false, "rbac.authorization.k8s.io/ClusterRoleBinding": false,
	"apiextensions.k8s.io/CustomResourceDefinition": false, "storage.k8s.io/StorageClass": false,
	"scheduling.k8s.io/PriorityClass": false, "apiregistration.k8s.io/APIService": false,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": false,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":   false,
}

// checkResult decodes and checks a plugin's answer beyond what abi validates.
func checkResult(res *abi.AddOnResult) ([]object, []workv1.ManifestConfigOption, error) {
	var objs []object
	seen := map[string]int{}
	for i, raw := range res.Manifests {
		o, err := decodeObject(raw)
		if err == nil {
			err = o.checkIdentity()
		}
		if err == nil {
			gk := o.group() + "/" + o.kind()
			namespaced, known := knownScope[gk]
			switch {
			case known && namespaced && o.namespace() == "":
				err = fmt.Errorf("%s %q has no metadata.namespace", o.kind(), o.name())
			case known && !namespaced && o.namespace() != "":
				err = fmt.Errorf("%s %q is cluster-scoped but has metadata.namespace %q", o.kind(), o.name(), o.namespace())
			}
			key := o.apiVersion() + "/" + o.kind() + "/" + o.namespace() + "/" + o.name()
			if j, dup := seen[key]; dup && err == nil {
				err = fmt.Errorf("%s is also manifests[%d]", o.describe(), j)
			}
			seen[key] = i
		}
		if err != nil {
			return nil, nil, fmt.Errorf("manifests[%d]: %w", i, err)
		}
		coerceReplicas(o)
		objs = append(objs, o)
	}
	var configs []workv1.ManifestConfigOption
	for i, raw := range res.ManifestConfigs {
		var mc workv1.ManifestConfigOption
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		err := d.Decode(&mc)
		if err == nil {
			err = checkManifestConfig(&mc)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("manifestConfigs[%d]: %w", i, err)
		}
		configs = append(configs, mc)
	}
	return objs, configs, nil
}

func checkManifestConfig(mc *workv1.ManifestConfigOption) error {
	for i, r := range mc.FeedbackRules {
		switch r.Type {
		case workv1.WellKnownStatusType:
		case workv1.JSONPathsType:
			if len(r.JsonPaths) == 0 {
				return fmt.Errorf("feedbackRules[%d]: JSONPaths needs jsonPaths", i)
			}
		default:
			return fmt.Errorf("feedbackRules[%d].type: %q is not WellKnownStatus or JSONPaths", i, r.Type)
		}
	}
	for i, c := range mc.ConditionRules {
		switch c.Type {
		case workv1.WellKnownConditionsType, workv1.CelConditionExpressionsType:
		default:
			return fmt.Errorf("conditionRules[%d].type: %q is not WellKnownConditions or CEL", i, c.Type)
		}
		if c.Condition == "" {
			return fmt.Errorf("conditionRules[%d].condition: must be set", i)
		}
	}
	switch mc.FeedbackScrapeType {
	case "", workv1.FeedbackPollType, workv1.FeedbackWatchType:
	default:
		return fmt.Errorf("feedbackScrapeType: %q is not Poll or Watch", mc.FeedbackScrapeType)
	}
	return nil
}

package join

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/install"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// maxManagedKubeconfig caps the managed cluster's kubeconfig a hosted join reads.
const maxManagedKubeconfig = 1 << 20

// OperatorRelease is the release name join renders the chart's operator with: the one
// operator serves every Klusterlet of its cluster, so its Deployment's selector
// (app.kubernetes.io/instance) must not change with the Klusterlet a join adds.
const OperatorRelease = "klusterlet"

// HostedKlusterletName is a Hosted Klusterlet's default name: klusterlet-<cluster>.
func HostedKlusterletName(cluster string) string { return "klusterlet-" + cluster }

// HostedManagedNamespace is the klusterlet namespace on the managed cluster of Hosted
// Klusterlet name (OCM's choice in clusteradm): open-cluster-management-<name>.
func HostedManagedNamespace(name string) string { return "open-cluster-management-" + name }

// RenderOperator renders what join applies for a Klusterlet in mode, OCM's way: the klusterlet
// operator (Deployment klusterlet in open-cluster-management, its RBAC, chart render:
// operator), the Klusterlet and the bootstrap Secret in its agent namespace; the operator then
// renders the agents. Singleton and Default: the agents run on this cluster, in
// o.AgentNamespace. Hosted and SingletonHosted: the agent namespace is the Klusterlet's name,
// Secret external-managed-kubeconfig there holds managedKubeconfig, and the managed cluster's
// CRDs are left out (the operator applies them there).
func RenderOperator(o Options, mode operatorv1.InstallMode, bootstrapKubeconfig, managedKubeconfig []byte) ([]*unstructured.Unstructured, error) {
	switch mode {
	case operatorv1.InstallModeSingleton, operatorv1.InstallModeDefault:
		if len(managedKubeconfig) > 0 {
			return nil, fmt.Errorf("--managed-cluster-kubeconfig needs --mode Hosted or SingletonHosted, not %s", mode)
		}
		o.defaults()
		values := install.MergeValues(o.Values, map[string]any{
			"render":                 "operator",
			"clusterName":            o.ClusterName,
			"bootstrapHubKubeconfig": string(bootstrapKubeconfig),
			"klusterlet": map[string]any{
				"name": o.KlusterletName,
				"spec": map[string]any{"deployOption": map[string]any{"mode": string(mode)}},
			},
		})
		return install.Render(install.KlusterletChart, OperatorRelease, o.AgentNamespace, values)
	case operatorv1.InstallModeHosted, operatorv1.InstallModeSingletonHosted:
		return RenderHosted(o, mode, bootstrapKubeconfig, managedKubeconfig)
	}
	return nil, fmt.Errorf("--mode %q: Singleton, Default, Hosted or SingletonHosted", mode)
}

// RenderHosted is RenderOperator for the Hosted modes.
func RenderHosted(o Options, mode operatorv1.InstallMode, bootstrapKubeconfig, managedKubeconfig []byte) ([]*unstructured.Unstructured, error) {
	switch {
	case mode != operatorv1.InstallModeHosted && mode != operatorv1.InstallModeSingletonHosted:
		return nil, fmt.Errorf("--mode %q: Hosted or SingletonHosted", mode)
	case len(managedKubeconfig) == 0:
		return nil, errors.New("--managed-cluster-kubeconfig is required with --mode " + string(mode))
	case len(managedKubeconfig) > maxManagedKubeconfig:
		return nil, fmt.Errorf("--managed-cluster-kubeconfig: %d bytes, more than %d", len(managedKubeconfig), maxManagedKubeconfig)
	}
	if _, err := clientcmd.RESTConfigFromKubeConfig(managedKubeconfig); err != nil {
		return nil, fmt.Errorf("--managed-cluster-kubeconfig: %w", err)
	}
	if o.KlusterletName == "" {
		o.KlusterletName = HostedKlusterletName(o.ClusterName)
	}
	values := install.MergeValues(o.Values, map[string]any{
		"render":                 "operator",
		"clusterName":            o.ClusterName,
		"bootstrapHubKubeconfig": string(bootstrapKubeconfig),
		"klusterlet": map[string]any{
			"name":             o.KlusterletName,
			"managedNamespace": HostedManagedNamespace(o.KlusterletName),
			"spec":             map[string]any{"deployOption": map[string]any{"mode": string(mode)}},
		},
	})
	objs, err := install.Render(install.KlusterletChart, OperatorRelease, o.KlusterletName, values)
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, obj := range objs {
		if kop.Target(obj, o.KlusterletName) == operatorv1.TargetManaged {
			continue
		}
		out = append(out, obj)
	}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: operatorv1.ExternalManagedKubeConfigSecret, Namespace: o.KlusterletName,
			Labels: map[string]string{install.PartOfLabel: install.PartOf}},
		Data: map[string][]byte{kop.ExternalKubeconfigKey: managedKubeconfig}}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(secret)
	if err != nil {
		return nil, err
	}
	return append(out, &unstructured.Unstructured{Object: m}), nil
}

// CheckConflict refuses a join of cluster to hub when Klusterlet name exists and its bootstrap
// Secret (in agent namespace agentNS) names another hub: a second hub takes a Klusterlet of
// its own.
func CheckConflict(ctx context.Context, cfg *rest.Config, name, agentNS, cluster, hub string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(klusterletGVR).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading Klusterlet %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	s, err := kube.CoreV1().Secrets(agentNS).Get(ctx, registration.DefaultBootstrapKubeconfigSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", agentNS, registration.DefaultBootstrapKubeconfigSecret, err)
	}
	other, err := clientcmd.RESTConfigFromKubeConfig(s.Data[registration.KubeconfigKey])
	if err != nil || strings.TrimSuffix(other.Host, "/") == strings.TrimSuffix(hub, "/") {
		return nil // the same hub: a join again updates it
	}
	hint := "--klusterlet-name klusterlet-<hub> --agent-namespace open-cluster-management-agent-<hub>"
	if agentNS == name {
		hint = "--klusterlet-name klusterlet-" + cluster + "-<hub>"
	}
	return fmt.Errorf("Klusterlet %s exists on this cluster and joins hub %s, not %s: join this hub with another Klusterlet, %s",
		name, other.Host, hub, hint)
}

// CheckHostedConflict is CheckConflict for a Hosted Klusterlet, whose agent namespace is its name.
func CheckHostedConflict(ctx context.Context, hosting *rest.Config, name, cluster, hub string) error {
	return CheckConflict(ctx, hosting, name, name, cluster, hub)
}

// UnjoinKlusterlet deletes Klusterlet name on the cluster of cfg and waits (bounded by ctx)
// until the klusterlet operator's finalizers let it go (its cleanup removes the agents, what
// they applied and the Klusterlet's objects on both clusters), naming what holds it up; when
// no Klusterlet remains it removes the klusterlet operator (its Deployment and RBAC) and,
// after a Singleton or Default Klusterlet, the chart's CRDs and the add-on namespaces. The
// agent's hub identity, read first, tells the hub the agent is gone. It reports false when
// there is no Klusterlet name (nothing of the operator's to remove).
func UnjoinKlusterlet(ctx context.Context, cfg *rest.Config, name string, progress func(string)) (bool, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	k, err := dyn.Resource(klusterletGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unjoin: reading Klusterlet %s: %w", name, err)
	}
	mode, _, _ := unstructured.NestedString(k.Object, "spec", "deployOption", "mode")
	isHosted := mode == string(operatorv1.InstallModeHosted) || mode == string(operatorv1.InstallModeSingletonHosted)
	agentNS := name
	if !isHosted {
		agentNS, _, _ = unstructured.NestedString(k.Object, "spec", "namespace")
		agentNS = cmp.Or(agentNS, install.AgentNamespace)
	}
	hubSecret, _ := registration.ReadHubSecret(ctx, kube.CoreV1(), agentNS, registration.DefaultHubKubeconfigSecret)
	progress(fmt.Sprintf("deleting Klusterlet %s; the klusterlet operator removes its agents and what it applied", name))
	if err := install.Delete(ctx, cfg, []*unstructured.Unstructured{k}, false); err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	// The hub keeps the ManagedCluster; told now, it does not wait for the lease to expire.
	if hubSecret != nil && len(hubSecret.Kubeconfig) > 0 && hubSecret.ClusterName != "" {
		if err := registration.ReportRemoved(ctx, hubSecret.Kubeconfig, hubSecret.ClusterName); err != nil {
			progress(fmt.Sprintf("could not tell the hub that the agent of cluster %s is gone (it notices when the cluster's lease expires): %v", hubSecret.ClusterName, err))
		} else {
			progress(fmt.Sprintf("told the hub that the agent of cluster %s is gone", hubSecret.ClusterName))
		}
	}
	others, managing, err := otherKlusterletsManaging(ctx, dyn, name)
	if err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	if len(others) > 0 {
		if !isHosted && !managing {
			// Only Hosted Klusterlets remain: they manage other clusters from here, so the
			// add-on namespaces this cluster's agents created go now (the operator removed
			// the managed cluster's CRDs with this Klusterlet).
			progress("removing the add-on namespaces: no other Klusterlet manages this cluster")
			if err := install.Delete(ctx, cfg, addOnNamespaces(), true); err != nil {
				return true, fmt.Errorf("unjoin: %w", err)
			}
		}
		progress("kept the klusterlet operator: Klusterlets " + strings.Join(others, ", ") + " remain")
		return true, nil
	}
	objs, err := install.Render(install.KlusterletChart, name, agentNS, map[string]any{"render": "operator", "clusterName": "unjoin",
		"klusterlet": map[string]any{"name": name, "spec": map[string]any{"deployOption": map[string]any{"mode": mode}}}})
	if err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	var operator, crds []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, o)
		case "Klusterlet", "Secret":
		case "Namespace":
			// Its namespace goes when it held the operator only (a hub operator may share it).
			if o.GetName() == kop.OperatorNamespace && onlyOperator(ctx, cfg) {
				operator = append(operator, o)
			}
		default:
			operator = append(operator, o)
		}
	}
	progress("removing the klusterlet operator: no Klusterlet remains")
	if err := install.Delete(ctx, cfg, operator, false); err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	if isHosted {
		return true, nil // the Klusterlet CRD stays: the hosting cluster's API for further ones
	}
	// This cluster was the managed one: the add-on namespaces the agents created and the
	// chart's CRDs go with its last Klusterlet (those the operator kept, its own API).
	gone := addOnNamespaces()
	progress("removing the add-on namespaces and the klusterlet CRDs (no other Klusterlet remains)")
	if err := install.Delete(ctx, cfg, append(gone, crds...), true); err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	return true, nil
}

// UnjoinHosted is UnjoinKlusterlet.
func UnjoinHosted(ctx context.Context, hosting *rest.Config, name string, progress func(string)) (bool, error) {
	return UnjoinKlusterlet(ctx, hosting, name, progress)
}

// onlyOperator reports that the operator namespace holds no Deployment but the klusterlet
// operator's.
func onlyOperator(ctx context.Context, hosting *rest.Config) bool {
	kube, err := kubernetes.NewForConfig(hosting)
	if err != nil {
		return false
	}
	l, err := kube.AppsV1().Deployments(kop.OperatorNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, d := range l.Items {
		if d.Name != "klusterlet" {
			return false
		}
	}
	return true
}

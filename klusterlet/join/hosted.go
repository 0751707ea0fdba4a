package join

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// HostedKlusterletName is a Hosted Klusterlet's default name: klusterlet-<cluster>.
func HostedKlusterletName(cluster string) string { return "klusterlet-" + cluster }

// HostedManagedNamespace is the klusterlet namespace on the managed cluster of Hosted
// Klusterlet name (OCM's choice in clusteradm): open-cluster-management-<name>.
func HostedManagedNamespace(name string) string { return "open-cluster-management-" + name }

// RenderHosted renders what a hosted join applies to the hosting cluster: the klusterlet
// operator (Deployment klusterlet in open-cluster-management, its RBAC), the Klusterlet in
// mode (Hosted or SingletonHosted) with the agent namespace its name, the bootstrap Secret
// there, and Secret external-managed-kubeconfig holding managedKubeconfig. The managed
// cluster's CRDs are left out: the operator applies them there.
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
	objs, err := install.Render(install.KlusterletChart, o.KlusterletName, o.KlusterletName, values)
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

// CheckHostedConflict refuses a hosted join of cluster to hub when Klusterlet name exists on
// the hosting cluster and its bootstrap Secret names another hub: a second hub of one
// managed cluster takes a Klusterlet of its own.
func CheckHostedConflict(ctx context.Context, hosting *rest.Config, name, cluster, hub string) error {
	dyn, err := dynamic.NewForConfig(hosting)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(klusterletGVR).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading Klusterlet %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfig(hosting)
	if err != nil {
		return err
	}
	s, err := kube.CoreV1().Secrets(name).Get(ctx, registration.DefaultBootstrapKubeconfigSecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", name, registration.DefaultBootstrapKubeconfigSecret, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[registration.KubeconfigKey])
	if err != nil || strings.TrimSuffix(cfg.Host, "/") == strings.TrimSuffix(hub, "/") {
		return nil // the same hub: a join again updates it
	}
	return fmt.Errorf("Klusterlet %s exists on the hosting cluster and joins hub %s, not %s: join this hub with another Klusterlet, "+
		"--klusterlet-name klusterlet-%s-<hub>", name, cfg.Host, hub, cluster)
}

// UnjoinHosted deletes Hosted Klusterlet name on the hosting cluster and waits (bounded by
// ctx) until the operator's finalizers let it go, naming what holds it up; when no
// Klusterlet remains it removes the klusterlet operator (its Deployment and RBAC; the
// Klusterlet CRD stays, as other Klusterlets' API). It reports false when name is no
// Hosted Klusterlet.
func UnjoinHosted(ctx context.Context, hosting *rest.Config, name string, progress func(string)) (bool, error) {
	dyn, err := dynamic.NewForConfig(hosting)
	if err != nil {
		return false, err
	}
	k, err := dyn.Resource(klusterletGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unjoin: reading Klusterlet %s: %w", name, err)
	}
	mode, _, _ := unstructured.NestedString(k.Object, "spec", "deployOption", "mode")
	if mode != string(operatorv1.InstallModeHosted) && mode != string(operatorv1.InstallModeSingletonHosted) {
		return false, nil
	}
	progress(fmt.Sprintf("deleting Klusterlet %s; the klusterlet operator removes its agents and what it applied on both clusters", name))
	if err := install.Delete(ctx, hosting, []*unstructured.Unstructured{k}, false); err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	others, err := otherKlusterlets(ctx, dyn, name)
	if err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	if len(others) > 0 {
		progress("kept the klusterlet operator: Klusterlets " + strings.Join(others, ", ") + " remain")
		return true, nil
	}
	objs, err := install.Render(install.KlusterletChart, name, name, map[string]any{"render": "operator", "clusterName": "unjoin",
		"klusterlet": map[string]any{"name": name, "spec": map[string]any{"deployOption": map[string]any{"mode": mode}}}})
	if err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	var operator []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "Klusterlet", "Secret":
		case "Namespace":
			// Its namespace goes when it held the operator only (a hub operator may share it).
			if o.GetName() == kop.OperatorNamespace && onlyOperator(ctx, hosting) {
				operator = append(operator, o)
			}
		default:
			operator = append(operator, o)
		}
	}
	progress("removing the klusterlet operator: no Klusterlet remains")
	if err := install.Delete(ctx, hosting, operator, false); err != nil {
		return true, fmt.Errorf("unjoin: %w", err)
	}
	return true, nil
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

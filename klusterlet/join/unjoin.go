package join

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	authenticationv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/clusterproxy"
	"github.com/flotilla-dev/flotilla/core/install"
	"github.com/flotilla-dev/flotilla/klusterlet"
	kop "github.com/flotilla-dev/flotilla/klusterlet/operator"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// UnjoinOptions name the klusterlet to remove.
type UnjoinOptions struct {
	// KlusterletName and AgentNamespace as given to join; defaults as there. The Klusterlet's
	// spec.namespace, when the Klusterlet still exists, wins over AgentNamespace.
	KlusterletName, AgentNamespace string
}

var (
	klusterletGVR = schema.GroupVersionResource{Group: "operator.open-cluster-management.io", Version: "v1", Resource: "klusterlets"}
)

// Unjoin removes a klusterlet from the managed cluster with everything it applied: its agent
// stops first (the Deployment goes) and its permissions and its work agent's are revoked, so
// nothing is re-applied; then the add-ons' client certificate Secrets it wrote go, every
// AppliedManifestWork of its hub is deleted, and the kube-controller-manager's garbage
// collector deletes what they own (every resource the work agent applied, unless a work
// orphaned it); then the agent namespace with its Secrets, and the chart's cluster-scoped
// objects. The last klusterlet on the cluster also takes the add-on namespace and the
// klusterlet CRDs with it.
//
// The ManagedCluster stays on the hub, its Available condition Unknown (unjoin reports that
// with the agent's identity before removing it), until the hub's admin deletes it (kubectl
// delete managedcluster <name>), which removes the hub's side.
func Unjoin(ctx context.Context, managed *rest.Config, o UnjoinOptions, progress func(string)) error {
	if o.KlusterletName == "" {
		o.KlusterletName = DefaultKlusterletName
	}
	if o.AgentNamespace == "" {
		o.AgentNamespace = install.AgentNamespace
	}
	dyn, err := dynamic.NewForConfig(managed)
	if err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	kube, err := kubernetes.NewForConfig(managed)
	if err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	if k, err := dyn.Resource(klusterletGVR).Get(ctx, o.KlusterletName, metav1.GetOptions{}); err == nil {
		if ns, _, _ := unstructured.NestedString(k.Object, "spec", "namespace"); ns != "" {
			o.AgentNamespace = ns
		}
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("unjoin: reading Klusterlet %s: %w", o.KlusterletName, err)
	}

	// The chart rendered with any cluster name has the same objects by name.
	objs, err := install.Render(install.KlusterletChart, o.KlusterletName, o.AgentNamespace, map[string]any{
		"render": "components", "clusterName": "unjoin", "klusterlet": map[string]any{"name": o.KlusterletName}})
	if err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	var deployments, bindings, rest []*unstructured.Unstructured
	for _, obj := range append(objs, Legacy(o.KlusterletName)...) {
		switch obj.GetKind() {
		case "Deployment":
			deployments = append(deployments, obj)
		case "CustomResourceDefinition", "Namespace":
			// CRDs go only with the last klusterlet, the namespace after the applied works.
		case "ClusterRoleBinding", "RoleBinding":
			bindings = append(bindings, obj)
			rest = append(rest, obj)
		default:
			rest = append(rest, obj)
		}
	}
	progress(fmt.Sprintf("stopping the agent of Klusterlet %s in namespace %s", o.KlusterletName, o.AgentNamespace))
	if err := install.Delete(ctx, managed, deployments, false); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	if err := waitNoPods(ctx, kube, o.AgentNamespace, o.KlusterletName); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	// A replica still shutting down (or run outside the Deployment) can change nothing from
	// here on: what it would put back (an add-on's Secret, an AppliedManifestWork) stays gone.
	progress(fmt.Sprintf("revoking the permissions of the agent and the work agent of Klusterlet %s", o.KlusterletName))
	if err := install.Delete(ctx, managed, bindings, false); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	if err := kop.DeleteAddOnSecrets(ctx, kube, o.AgentNamespace, progress); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}

	// While the agent's hub identity is still here, tell the hub the agent is gone, so that
	// deleting the ManagedCluster does not wait for it.
	if s, err := registration.ReadHubSecret(ctx, kube.CoreV1(), o.AgentNamespace, registration.DefaultHubKubeconfigSecret); err == nil && len(s.Kubeconfig) > 0 && s.ClusterName != "" {
		if err := registration.ReportRemoved(ctx, s.Kubeconfig, s.ClusterName); err != nil {
			progress(fmt.Sprintf("could not tell the hub that the agent of cluster %s is gone (it notices when the cluster's lease expires): %v", s.ClusterName, err))
		} else {
			progress(fmt.Sprintf("told the hub that the agent of cluster %s is gone", s.ClusterName))
		}
	}

	hubHash, err := kop.AgentHubHash(ctx, kube, o.AgentNamespace)
	if err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	others, err := otherKlusterlets(ctx, dyn, o.KlusterletName)
	if err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	last := len(others) == 0
	if err := kop.DeleteAppliedWorks(ctx, dyn, hubHash, last, progress); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}

	progress(fmt.Sprintf("removing the agent namespace %s and the Klusterlet's objects", o.AgentNamespace))
	nsObj := &unstructured.Unstructured{}
	nsObj.SetAPIVersion("v1")
	nsObj.SetKind("Namespace")
	nsObj.SetName(o.AgentNamespace)
	if err := install.Delete(ctx, managed, append(rest, nsObj), false); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	if !last {
		progress(fmt.Sprintf("kept the add-on namespace and the CRDs: Klusterlets %s remain", strings.Join(others, ", ")))
		return nil
	}
	namespaces := addOnNamespaces()
	progress("removing the add-on namespaces " + klusterlet.AddOnNamespace + ", " + authenticationv1beta1.AgentInstallNamespace + " and " +
		clusterproxy.DefaultInstallNamespace + " and the klusterlet CRDs (no other Klusterlet remains)")
	gone := namespaces
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			gone = append(gone, obj)
		}
	}
	if err := install.Delete(ctx, managed, gone, true); err != nil {
		return fmt.Errorf("unjoin: %w", err)
	}
	return nil
}

// Legacy are objects earlier versions of the klusterlet chart installed for Klusterlet name
// that it no longer has: join deletes them (an upgrade), unjoin too. The agent's binding to
// cluster-admin went when the agent and the work agent got OCM's narrower roles.
func Legacy(name string) []*unstructured.Unstructured {
	crb := &unstructured.Unstructured{}
	crb.SetAPIVersion("rbac.authorization.k8s.io/v1")
	crb.SetKind("ClusterRoleBinding")
	crb.SetName("flotilla:" + name + ":agent")
	return []*unstructured.Unstructured{crb}
}

// addOnNamespaces are the add-on namespace and those the klusterlet creates for its built-in
// add-on agents.
func addOnNamespaces() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, name := range []string{klusterlet.AddOnNamespace, authenticationv1beta1.AgentInstallNamespace, clusterproxy.DefaultInstallNamespace} {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName(name)
		out = append(out, ns)
	}
	return out
}

func otherKlusterlets(ctx context.Context, dyn dynamic.Interface, self string) ([]string, error) {
	out, _, err := otherKlusterletsManaging(ctx, dyn, self)
	return out, err
}

// otherKlusterletsManaging is otherKlusterlets, and whether one of them manages this cluster
// (a Singleton or Default one; a Hosted one manages another cluster from here).
func otherKlusterletsManaging(ctx context.Context, dyn dynamic.Interface, self string) ([]string, bool, error) {
	l, err := dyn.Resource(klusterletGVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) { // no such CRD (yet, or any more)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("listing Klusterlets: %w", err)
	}
	var out []string
	managing := false
	for _, k := range l.Items {
		if k.GetName() != self && k.GetDeletionTimestamp() == nil {
			out = append(out, k.GetName())
			mode, _, _ := unstructured.NestedString(k.Object, "spec", "deployOption", "mode")
			managing = managing || (mode != string(operatorv1.InstallModeHosted) && mode != string(operatorv1.InstallModeSingletonHosted))
		}
	}
	return out, managing, nil
}

func waitNoPods(ctx context.Context, kube kubernetes.Interface, ns, klusterletName string) error {
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + klusterletName}
	return kop.WaitGone(ctx, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil {
			return false, fmt.Errorf("listing the agent's pods in %s: %w", ns, err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				running++
			}
		}
		return running == 0, nil
	})
}

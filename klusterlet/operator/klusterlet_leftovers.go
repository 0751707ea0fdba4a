package operator

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/klusterlet/addon"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
	"github.com/flotilla-dev/flotilla/klusterlet/work"
)

// What a klusterlet leaves on its managed cluster besides what was rendered: the
// AppliedManifestWorks of its hub with what they own, and its add-ons' Secrets. The
// operator's cleanup and flotilla unjoin (Default mode) remove them with these.

var appliedWorkGVR = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}

// DeleteAddOnSecrets deletes the add-ons' client certificate Secrets the klusterlet of agent
// namespace ns wrote, wherever they are (labelled addon.SecretKlusterletLabel).
func DeleteAddOnSecrets(ctx context.Context, kube kubernetes.Interface, ns string, progress func(string)) error {
	sel := addon.SecretKlusterletLabel + "=" + ns
	l, err := kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if apierrors.IsForbidden(err) {
		// The klusterlet operator may not read Secrets across the cluster (least privilege):
		// it deletes them by label, namespace by namespace, without reading them.
		return deleteAddOnSecretsBlind(ctx, kube, sel, progress)
	}
	if err != nil {
		return fmt.Errorf("listing the add-ons' Secrets (%s): %w", sel, err)
	}
	for _, s := range l.Items {
		if err := kube.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the Secret %s/%s of add-on %s: %w", s.Namespace, s.Name, s.Labels[addon.SecretAddOnLabel], err)
		}
		progress(fmt.Sprintf("deleted the client certificate Secret %s/%s of add-on %s", s.Namespace, s.Name, s.Labels[addon.SecretAddOnLabel]))
	}
	return nil
}

// deleteAddOnSecretsBlind deletes the Secrets labelled sel in every namespace with
// deletecollection, which needs no right to read them.
func deleteAddOnSecretsBlind(ctx context.Context, kube kubernetes.Interface, sel string, progress func(string)) error {
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the namespaces for the add-ons' Secrets (%s): %w", sel, err)
	}
	for _, n := range nss.Items {
		if err := kube.CoreV1().Secrets(n.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the add-ons' Secrets (%s) in namespace %s: %w", sel, n.Name, err)
		}
	}
	progress(fmt.Sprintf("deleted the add-ons' client certificate Secrets (%s) in every namespace", sel))
	return nil
}

// AgentHubHash is the prefix of the AppliedManifestWorks of the agent's hub: the hash of the
// hub URL in the agent's hub kubeconfig, else in its bootstrap kubeconfig; "" when neither
// exists (the agent never ran, so it applied nothing).
func AgentHubHash(ctx context.Context, kube kubernetes.Interface, ns string) (string, error) {
	for _, name := range []string{registration.DefaultHubKubeconfigSecret, registration.DefaultBootstrapKubeconfigSecret} {
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
		if err != nil || cfg.Host == "" {
			continue
		}
		return work.HubHash(cfg.Host), nil
	}
	return "", nil
}

// DeleteAppliedWorks deletes the AppliedManifestWorks named <hubHash>-... (all of them when
// all is set) and waits until they and what they own are gone. The agent is stopped, so their
// finalizers are removed here; the garbage collector deletes the owned resources, which is
// what the agent's finalizer would have done.
func DeleteAppliedWorks(ctx context.Context, dyn dynamic.Interface, hubHash string, all bool, progress func(string)) error {
	l, err := dyn.Resource(appliedWorkGVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) { // no such CRD (yet, or any more)
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing AppliedManifestWorks: %w", err)
	}
	type ownedRes struct {
		gvr       schema.GroupVersionResource
		ns, name  string
		uid       types.UID
		workOwner string
	}
	var owned []ownedRes
	var mine []unstructured.Unstructured
	for _, a := range l.Items {
		hash, _, _ := unstructured.NestedString(a.Object, "spec", "hubHash")
		if !all && (hubHash == "" || (hash != hubHash && !strings.HasPrefix(a.GetName(), hubHash+"-"))) {
			continue
		}
		mine = append(mine, a)
		res, _, _ := unstructured.NestedSlice(a.Object, "status", "appliedResources")
		for _, r := range res {
			m, _ := r.(map[string]any)
			str := func(k string) string { s, _ := m[k].(string); return s }
			owned = append(owned, ownedRes{
				gvr: schema.GroupVersionResource{Group: str("group"), Version: str("version"), Resource: str("resource")},
				ns:  str("namespace"), name: str("name"), uid: types.UID(str("uid")), workOwner: a.GetName(),
			})
		}
	}
	if len(mine) == 0 {
		return nil
	}
	progress(fmt.Sprintf("deleting %d AppliedManifestWorks and the %d resources they applied", len(mine), len(owned)))
	for _, a := range mine {
		if len(a.GetFinalizers()) > 0 {
			patch := []byte(`{"metadata":{"finalizers":null}}`)
			if _, err := dyn.Resource(appliedWorkGVR).Patch(ctx, a.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("AppliedManifestWork %s: removing finalizers: %w", a.GetName(), err)
			}
		}
		bg := metav1.DeletePropagationBackground
		if err := dyn.Resource(appliedWorkGVR).Delete(ctx, a.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting AppliedManifestWork %s: %w", a.GetName(), err)
		}
	}
	// Wait for the garbage collector. A resource another owner keeps (orphaned by its work, or
	// shared with another hub's work) is not waited for.
	for _, r := range owned {
		if err := WaitGone(ctx, func(ctx context.Context) (bool, error) {
			var ri dynamic.ResourceInterface = dyn.Resource(r.gvr)
			if r.ns != "" {
				ri = dyn.Resource(r.gvr).Namespace(r.ns)
			}
			obj, err := ri.Get(ctx, r.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if apierrors.IsForbidden(err) {
				return true, nil // the operator may not read this kind: the garbage collector deletes it unwatched
			}
			if err != nil {
				return false, err
			}
			if r.uid != "" && obj.GetUID() != r.uid {
				return true, nil // gone and made again by someone else
			}
			if obj.GetDeletionTimestamp() != nil {
				return false, nil
			}
			for _, ref := range obj.GetOwnerReferences() {
				if ref.Kind != "AppliedManifestWork" {
					return true, nil // another owner keeps it
				}
			}
			return len(obj.GetOwnerReferences()) == 0, nil // orphaned by its work
		}); err != nil {
			return fmt.Errorf("waiting for %s %s/%s (applied by %s) to be deleted: %w", r.gvr.Resource, r.ns, r.name, r.workOwner, err)
		}
	}
	return nil
}

// WaitGone polls done every half second until it reports true or ctx ends.
func WaitGone(ctx context.Context, done func(context.Context) (bool, error)) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done(ctx)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

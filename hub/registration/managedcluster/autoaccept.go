package managedcluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// Annotations on a cluster the hub accepted by itself under the ManagedClusterAutoApproval gate.
const (
	// AutoAcceptedOnAnnotation is OCM's mark, with the time: a cluster is accepted automatically
	// once, on its first join; after that only the hub admin accepts or denies it.
	AutoAcceptedOnAnnotation = "open-cluster-management.io/automatically-accepted-on"
	// AutoAcceptedByAnnotation names the CSRApproval plugin whose approval of the cluster's
	// first registration CSR accepted it.
	AutoAcceptedByAnnotation = "flotilla.dev/automatically-accepted-by"
)

// AutoAcceptable reports whether mc may be accepted automatically, or why not: it must be a
// first join, neither accepted now nor ever accepted (automatically or by the admin) before,
// so that a cluster the admin denied stays denied.
func AutoAcceptable(mc *clusterv1.ManagedCluster) (bool, string) {
	switch {
	case !mc.DeletionTimestamp.IsZero():
		return false, "it is being deleted"
	case mc.Spec.HubAcceptsClient:
		return false, "it is accepted already"
	case mc.Annotations[AutoAcceptedOnAnnotation] != "":
		return false, "it was accepted automatically before (" + AutoAcceptedOnAnnotation + "); the hub admin decides now"
	case meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted) != nil:
		return false, "it was accepted before; the hub admin decides now"
	}
	return true, ""
}

// AutoAccept sets spec.hubAcceptsClient on mc and records that plugin's approval did it. The
// patch is guarded by resourceVersion, so it never acts on a stale view of the cluster.
func AutoAccept(ctx context.Context, c client.Client, mc *clusterv1.ManagedCluster, plugin string, now time.Time) error {
	orig := mc
	mc = mc.DeepCopy()
	mc.Spec.HubAcceptsClient = true
	metav1.SetMetaDataAnnotation(&mc.ObjectMeta, AutoAcceptedOnAnnotation, now.UTC().Format(time.RFC3339))
	metav1.SetMetaDataAnnotation(&mc.ObjectMeta, AutoAcceptedByAnnotation, plugin)
	if err := c.Patch(ctx, mc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("ManagedCluster %s: accepting automatically (spec.hubAcceptsClient): %w", mc.Name, err)
	}
	return nil
}

// acceptedCondition is HubAcceptedManagedCluster once accepted. It credits the plugin only
// for the acceptance the plugin caused: a cluster accepted again after a denial was accepted
// by the admin, and an existing True condition keeps its message.
func acceptedCondition(mc *clusterv1.ManagedCluster) metav1.Condition {
	cond := metav1.Condition{
		Type:    clusterv1.ManagedClusterConditionHubAccepted,
		Status:  metav1.ConditionTrue,
		Reason:  clusterv1.ConditionReasonHubClusterAdminAccepted,
		Message: "Accepted by hub cluster admin",
	}
	prev := meta.FindStatusCondition(mc.Status.Conditions, clusterv1.ManagedClusterConditionHubAccepted)
	switch plugin := mc.Annotations[AutoAcceptedByAnnotation]; {
	case prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == cond.Reason:
		cond.Message = prev.Message
	case plugin != "" && (prev == nil || prev.Reason != clusterv1.ConditionReasonHubClusterAdminDenied):
		// The reason stays OCM's: consumers key on it, and OCM's own auto-acceptance keeps it too.
		cond.Message = fmt.Sprintf("Accepted automatically (ManagedClusterAutoApproval): CSRApproval plugin %s approved its first registration CSR", plugin)
	}
	return cond
}

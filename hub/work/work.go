// Package work holds the hub's side of work distribution: a ManagedCluster's deletion waits
// for its ManifestWorks to be cleaned from the cluster, and the works of a cluster that
// stopped reporting say so instead of showing a stale status.
package work

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
)

// CleanupHook is the ManagedCluster cleanup hook for works: it deletes the cluster's
// ManifestWorks and reports done once they are gone. While the cluster's agent is
// available it removes what each work applied (the work's finalizer holds it until then);
// when the agent is not available nothing can clean the managed cluster, so the finalizers
// are released and the agent, should it come back, evicts the leftovers itself.
func CleanupHook(c client.Client) func(ctx context.Context, cluster string) (bool, error) {
	return func(ctx context.Context, cluster string) (bool, error) {
		works := &workv1.ManifestWorkList{}
		if err := c.List(ctx, works, client.InNamespace(cluster)); err != nil {
			return false, fmt.Errorf("listing the ManifestWorks of cluster %s: %w", cluster, err)
		}
		if len(works.Items) == 0 {
			return true, nil
		}
		mc := &clusterv1.ManagedCluster{}
		agentUp := false
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, mc); err == nil {
			agentUp = meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
		}
		for i := range works.Items {
			w := &works.Items[i]
			if w.DeletionTimestamp.IsZero() {
				if err := client.IgnoreNotFound(c.Delete(ctx, w)); err != nil {
					return false, fmt.Errorf("deleting ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
				}
			}
			if !agentUp {
				log.FromContext(ctx).Info("cluster is not available: releasing its ManifestWork without cleaning the cluster",
					"cluster", cluster, "manifestWork", w.Name)
				if err := apply.RemoveFinalizer(ctx, c, w, workv1.ManifestWorkFinalizer); err != nil {
					return false, fmt.Errorf("ManifestWork %s/%s: %w", w.Namespace, w.Name, err)
				}
			}
		}
		return false, nil
	}
}

// Reasons of the conditions the hub sets on the works of a cluster that stopped reporting.
const ReasonClusterUnavailable = "ManagedClusterUnavailable"

// markUnknown sets the work's Applied and Available conditions to Unknown, saying why. It
// reports whether it changed them.
func markUnknown(w *workv1.ManifestWork, cluster string, available *metav1.Condition) bool {
	why := "its agent has not reported"
	if available != nil && available.Message != "" {
		why = available.Message
	}
	changed := false
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: ReasonClusterUnavailable, ObservedGeneration: w.Generation,
			Message: fmt.Sprintf("ManagedCluster %s is not available (%s): the status of this work is not current", cluster, why)}
		if cur := meta.FindStatusCondition(w.Status.Conditions, t); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
			continue
		}
		meta.SetStatusCondition(&w.Status.Conditions, c)
		changed = true
	}
	return changed
}

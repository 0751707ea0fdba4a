package benchenv

import (
	"context"
	"fmt"
	"maps"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
)

// ClusterName is the name of simulated cluster i: cluster-0000, cluster-0001, …
func ClusterName(i int) string { return fmt.Sprintf("cluster-%04d", i) }

// Clusters are simulated ManagedClusters: no agent runs for them; they have the status their
// registration agents would write, and their namespaces.
type Clusters struct {
	// Set is the ManagedClusterSet they are members of.
	Set string
	// Accepted clusters are accepted by the hub and Joined, as registered clusters are; the
	// others are only Available.
	Accepted bool
	// Labels, when set, are more labels of cluster i (a region, say).
	Labels func(i int) map[string]string
	// Status, when set, adds to cluster i's status before it is written.
	Status func(i int, status *clusterv1.ManagedClusterStatus)
	// Then, when set, runs once cluster i and its namespace exist.
	Then func(ctx context.Context, i int) error
}

// Create creates the set and clusters ClusterName(0) to ClusterName(n-1) in it, 32 at a time.
func (cs Clusters) Create(ctx context.Context, c client.Client, n int) error {
	if err := c.Create(ctx, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: cs.Set}}); err != nil {
		return err
	}
	conditions := []string{clusterv1.ManagedClusterConditionAvailable}
	if cs.Accepted {
		conditions = []string{clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			name := ClusterName(i)
			mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{clusterv1beta2.ClusterSetLabel: cs.Set}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: cs.Accepted}}
			if cs.Labels != nil {
				maps.Copy(mc.Labels, cs.Labels(i))
			}
			if err := c.Create(gctx, mc); err != nil {
				return err
			}
			// A patch, not an update: the hub adds its finalizer meanwhile.
			orig := mc.DeepCopy()
			if cs.Status != nil {
				cs.Status(i, &mc.Status)
			}
			for _, t := range conditions {
				meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: t,
					Status: metav1.ConditionTrue, Reason: "Simulated", Message: "simulated"})
			}
			if err := c.Status().Patch(gctx, mc, client.MergeFrom(orig)); err != nil {
				return err
			}
			if err := c.Create(gctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			if cs.Then != nil {
				return cs.Then(gctx, i)
			}
			return nil
		})
	}
	return g.Wait()
}

// Bind creates namespace ns and a ManagedClusterSetBinding of set in it.
func Bind(ctx context.Context, c client.Client, ns, set string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	return c.Create(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}})
}

// SelectAll binds set to namespace ns and creates Placement ns/name there selecting n
// clusters, then waits until it selects them all, that is every cluster of the set.
func SelectAll(ctx context.Context, c client.Client, set, ns, name string, n int) error {
	if err := Bind(ctx, c, ns, set); err != nil {
		return err
	}
	all := int32(n)
	if err := c.Create(ctx, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1beta1.PlacementSpec{NumberOfClusters: &all}}); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "waiting for the placement's decisions")
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p := &clusterv1beta1.Placement{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
		return err == nil && int(p.Status.NumberOfSelectedClusters) == n, nil
	})
	if err != nil {
		return fmt.Errorf("the placement did not select %d clusters: %w", n, err)
	}
	return nil
}

package manager

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	clusterv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1alpha1"
	clusterv1beta1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta1"
	clusterv1beta2 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1beta2"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/hub/addon/builtin"
	"github.com/flotilla-dev/flotilla/hub/webhook"
)

// TestAddonsInstallAll: with AddonsInstallAll (flotilla hub --addons-install-all, the hub
// chart's addons.installAll, flotilla dev) the hub creates the Placement global over the
// ManagedClusterSet global bound in open-cluster-management-addon, and the built-in's
// ClusterManagementAddOn installs over it: a ManagedClusterAddOn appears in every cluster
// namespace, a cluster's that joins later too, without `flotilla addon enable`.
func TestAddonsInstallAll(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cp, err := environment.StartControlPlane(ctx, environment.ControlPlaneOptions{Name: environment.HubName, AllCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	// managed-serviceaccount alone needs no webhook server.
	h, err := New(Options{Config: cp.Config, SkipCRDInstall: true, Webhook: webhook.Options{Disabled: true},
		Addons: []string{builtin.ManagedServiceAccount}, AddonsInstallAll: true, Logger: testr.New(t).WithName("hub")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: h.Manager().GetScheme()})
	if err != nil {
		t.Fatal(err)
	}
	join := func(name string) {
		t.Helper()
		if err := c.Create(ctx, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}); err != nil {
			t.Fatal(err)
		}
	}
	join("early")
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("hub: %v", err)
		}
	})
	// within polls cond until it holds, or fails naming what it waited for.
	within := func(d time.Duration, what string, cond func() error) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			err := cond()
			if err == nil {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("waiting %s for %s: %v", d, what, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	ns := builtin.InstallAllNamespace
	within(time.Minute, "the ClusterManagementAddOn managed-serviceaccount installed over Placement "+ns+"/global", func() error {
		cma := &addonv1alpha1.ClusterManagementAddOn{}
		if err := c.Get(ctx, client.ObjectKey{Name: builtin.ManagedServiceAccount}, cma); err != nil {
			return err
		}
		want := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: "global"},
			RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}}
		if s := cma.Spec.InstallStrategy; s.Type != addonv1alpha1.AddonInstallStrategyPlacements || len(s.Placements) != 1 ||
			s.Placements[0].PlacementRef != want.PlacementRef || s.Placements[0].RolloutStrategy.Type != clusterv1alpha1.All {
			return fmt.Errorf("installStrategy %+v", s)
		}
		return nil
	})
	for _, o := range []client.Object{&corev1.Namespace{}, &clusterv1beta2.ManagedClusterSet{}, &clusterv1beta2.ManagedClusterSetBinding{}, &clusterv1beta1.Placement{}} {
		key := client.ObjectKey{Name: "global"}
		switch o.(type) {
		case *corev1.Namespace:
			key = client.ObjectKey{Name: ns}
		case *clusterv1beta2.ManagedClusterSetBinding, *clusterv1beta1.Placement:
			key.Namespace = ns
		}
		within(30*time.Second, fmt.Sprintf("%T %s", o, key), func() error { return c.Get(ctx, key, o) })
	}
	join("late")
	for _, cluster := range []string{"early", "late"} {
		within(2*time.Minute, "ManagedClusterAddOn "+cluster+"/"+builtin.ManagedServiceAccount+" installed by the placement", func() error {
			err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: builtin.ManagedServiceAccount}, &addonv1alpha1.ManagedClusterAddOn{})
			if err != nil {
				// Say where the chain stops: the Placement's decisions.
				p := &clusterv1beta1.Placement{}
				_ = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "global"}, p)
				return fmt.Errorf("%w (Placement %s/global: %d selected, conditions %+v)", err, ns, p.Status.NumberOfSelectedClusters, p.Status.Conditions)
			}
			return nil
		})
	}
}

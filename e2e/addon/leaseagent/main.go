// Command leaseagent is the smallest add-on agent, run by the e2e suite as its own process
// the way an add-on's agent runs on a managed cluster: with the hub kubeconfig the klusterlet
// wrote for it (<addon>-hub-kubeconfig, mounted as files), it reads its ManagedClusterAddOn on
// the hub, and while that works it renews Lease <addon> in its namespace on the managed
// cluster, which is what the klusterlet's Lease health check watches.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	hubKubeconfig := flag.String("hub-kubeconfig", "", "the add-on's hub kubeconfig (the klusterlet's <addon>-hub-kubeconfig Secret, as files)")
	kubeconfig := flag.String("kubeconfig", "", "the managed cluster")
	cluster := flag.String("cluster-name", "", "the managed cluster's name on the hub")
	addon := flag.String("addon-name", "", "the add-on")
	namespace := flag.String("addon-namespace", "open-cluster-management-agent-addon", "the agent's namespace, where its Lease is")
	interval := flag.Duration("interval", time.Second, "how often the Lease is renewed")
	leaseSeconds := flag.Int("lease-duration-seconds", 1, "the Lease's leaseDurationSeconds")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *hubKubeconfig, *kubeconfig, *cluster, *addon, *namespace, *interval, int32(*leaseSeconds)); err != nil {
		fmt.Fprintln(os.Stderr, "leaseagent:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, hubKubeconfig, kubeconfig, cluster, addon, namespace string, interval time.Duration, leaseSeconds int32) error {
	hubCfg, err := clientcmd.BuildConfigFromFlags("", hubKubeconfig)
	if err != nil {
		return fmt.Errorf("hub kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	hub := dynamic.NewForConfigOrDie(hubCfg).Resource(schema.GroupVersionResource{
		Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "managedclusteraddons"}).Namespace(cluster)
	leases := kubernetes.NewForConfigOrDie(cfg).CoordinationV1().Leases(namespace)
	for {
		if _, err := hub.Get(ctx, addon, metav1.GetOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "reading the ManagedClusterAddOn on the hub:", err)
		} else if err := renew(ctx, leases, addon, leaseSeconds); err != nil {
			fmt.Fprintln(os.Stderr, "renewing the Lease:", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func renew(ctx context.Context, leases interface {
	Get(context.Context, string, metav1.GetOptions) (*coordinationv1.Lease, error)
	Create(context.Context, *coordinationv1.Lease, metav1.CreateOptions) (*coordinationv1.Lease, error)
	Update(context.Context, *coordinationv1.Lease, metav1.UpdateOptions) (*coordinationv1.Lease, error)
}, name string, seconds int32) error {
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: &seconds, RenewTime: &now}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

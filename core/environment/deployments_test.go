package environment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRunDeployments runs a Deployment labelled as Flotilla's with a stand-in binary that
// records how it was started: one process per replica, as the ServiceAccount, with the
// container's args (listen addresses moved to loopback) and env; a new template restarts
// them, and deleting the Deployment stops them.
func TestRunDeployments(t *testing.T) {
	cp := startPlane(t, ControlPlaneOptions{Name: "kubelet"})
	kube := clientset(t, cp.Config)
	out := t.TempDir()
	bin := filepath.Join(out, "flotilla")
	script := "#!/bin/sh\necho \"$POD_NAMESPACE $POD_NAME $MODE $*\" >> \"$OUT_DIR/$POD_NAME\"\nexec sleep 600\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	const ns = "flotilla-test"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "hub"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": "flotilla-hub"}
	deploy := func(mode string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "hub", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{ServiceAccountName: "hub", Containers: []corev1.Container{{
						Name: "hub", Image: "flotilla",
						Args: []string{"hub", "--health-probe-bind-address=:8081", "--webhook-service=x/y:443", "--webhook-bind-address=:9443"},
						Env: []corev1.EnvVar{{Name: "OUT_DIR", Value: out}, {Name: "MODE", Value: mode},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
					}}},
				},
			},
		}
	}
	var mu sync.Mutex
	var log []string
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprintf(format, args...))
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cp.RunDeployments(runCtx, bin, []string{"flotilla-hub"}, "", logf) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("RunDeployments did not return within a minute of its context ending")
		}
	})

	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, deploy("first"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	started := func(pod, mode string) func() error {
		return func() error {
			b, err := os.ReadFile(filepath.Join(out, pod))
			if err != nil {
				return err
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, ns+" "+pod+" "+mode+" hub --kubeconfig=") {
				return fmt.Errorf("started as %q", last)
			}
			// Replica 0 serves the webhooks at a loopback URL, the others none (no Service
			// spreads the calls here).
			webhook := "--webhook-bind-address=127.0.0.1:0"
			if pod != "hub-0" {
				webhook = "--webhook-bind-address=0"
			}
			if !strings.Contains(last, "--health-probe-bind-address=127.0.0.1:") || !strings.Contains(last, webhook) ||
				strings.Contains(last, "--webhook-service") {
				return fmt.Errorf("addresses not moved to loopback: %q", last)
			}
			return nil
		}
	}
	poll(t, "both replicas started", func() error {
		if err := started("hub-0", "first")(); err != nil {
			return err
		}
		return started("hub-1", "first")()
	})
	poll(t, "status reports the replicas", func() error {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "hub", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.Replicas != 2 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})

	// A container without --health-probe-bind-address is ready while it runs, as a kubelet
	// treats one without a readiness probe (the hub operator's); the stand-in serves no
	// /readyz, so the hub's replicas, which have the flag, are not.
	op := deploy("operator")
	op.Name, op.Spec.Replicas = "operator", ptr.To[int32](1)
	op.Spec.Template.Spec.Containers[0].Args = []string{"operator", "hub"}
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, op, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the Deployment without a readiness endpoint ready, the one with it not", func() error {
		o, err := kube.AppsV1().Deployments(ns).Get(ctx, "operator", metav1.GetOptions{})
		if err != nil {
			return err
		}
		h, err := kube.AppsV1().Deployments(ns).Get(ctx, "hub", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if o.Status.ReadyReplicas != 1 || o.Status.AvailableReplicas != 1 || h.Status.ReadyReplicas != 0 {
			return fmt.Errorf("operator status %+v, hub status %+v", o.Status, h.Status)
		}
		return nil
	})
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "operator", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	d, err := kube.AppsV1().Deployments(ns).Get(ctx, "hub", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec = deploy("second").Spec
	if _, err := kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "restarted with the new template", started("hub-0", "second"))

	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "hub", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "stopped when the Deployment went", func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range log {
			if strings.HasPrefix(l, "stopping "+ns+"/hub") {
				return nil
			}
		}
		return fmt.Errorf("log %q", log)
	})
}

package environment

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// workloadTimeout bounds each wait for a workload's status. Scheduling and KWOK take well
// under a second; the rest is for two loaded cores.
const workloadTimeout = 2 * time.Minute

// awaitObject watches the named object until cond holds for it and returns it, failing the
// test with the last state seen when workloadTimeout passes first.
func awaitObject[T runtime.Object](t *testing.T, c cache.Getter, resource, namespace, name string, cond func(T) error) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), workloadTimeout)
	defer cancel()
	lw := cache.NewListWatchFromClient(c, resource, namespace, fields.OneTermEqualSelector("metadata.name", name))
	var last T
	lastErr := errors.New("not seen yet")
	proto := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	_, err := watchtools.UntilWithSync(ctx, lw, proto, nil, func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(T)
		if !ok || ev.Type == watch.Deleted {
			return false, nil
		}
		last, lastErr = obj, cond(obj)
		return lastErr == nil, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s: %v; last: %v", resource, namespace, name, err, lastErr)
	}
	return last
}

func TestWorkloadsRunOnSimulatedNodes(t *testing.T) {
	cp := startPlane(t, ControlPlaneOptions{Name: "workloads", Workloads: true, SimulatedNodes: 1})
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	cs := clientset(t, cp.Config)
	nodeName := SimulatedNodeName(cp.Name, 0)

	t.Run("KWOK runs the simulated Node", func(t *testing.T) {
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !NodeReady(node) || node.Status.Phase != corev1.NodeRunning || !strings.HasPrefix(node.Status.NodeInfo.KubeletVersion, "kwok-") {
			t.Errorf("Node %s: phase %q, kubelet %q, conditions %+v; want Ready, Running, run by KWOK",
				node.Name, node.Status.Phase, node.Status.NodeInfo.KubeletVersion, node.Status.Conditions)
		}
		if q := node.Status.Allocatable[corev1.ResourceCPU]; q.String() != "4" {
			t.Errorf("allocatable cpu %s, want the 4 it was created with", q.String())
		}
		if node.Spec.PodCIDR != "10.244.1.0/24" || len(node.Status.Addresses) == 0 || node.Status.Addresses[0].Address != "172.18.0.2" {
			t.Errorf("Node network: podCIDR %q, addresses %+v", node.Spec.PodCIDR, node.Status.Addresses)
		}
		// Liveness as a kubelet reports it: a Lease in kube-node-lease, renewed by KWOK.
		awaitObject(t, cs.CoordinationV1().RESTClient(), "leases", corev1.NamespaceNodeLease, nodeName, func(l *coordinationv1.Lease) error {
			if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != kwokNodeLeaseSeconds {
				return fmt.Errorf("lease spec %+v", l.Spec)
			}
			return nil
		})
	})

	ns := "apps"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As on any cluster, a Pod is admitted once its service account exists
	// (serviceaccount-controller); workload controllers just retry until then.
	awaitObject(t, cs.CoreV1().RESTClient(), "serviceaccounts", ns, "default", func(*corev1.ServiceAccount) error { return nil })
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	podTemplate := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + app + ":1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
			},
		}
	}

	t.Run("workloads", func(t *testing.T) {
		t.Run("Deployment is Available with ready replicas on the Node", func(t *testing.T) {
			t.Parallel()
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
				Spec: appsv1.DeploymentSpec{
					Replicas: new(int32(2)),
					Selector: &metav1.LabelSelector{MatchLabels: labels("web")},
					Template: podTemplate("web"),
				},
			}
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			awaitObject(t, cs.AppsV1().RESTClient(), "deployments", ns, d.Name, func(d *appsv1.Deployment) error {
				available := false
				for _, c := range d.Status.Conditions {
					available = available || (c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue)
				}
				if d.Status.ObservedGeneration != d.Generation || d.Status.ReadyReplicas != 2 || d.Status.AvailableReplicas != 2 || !available {
					return fmt.Errorf("status %+v", d.Status)
				}
				return nil
			})
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 2 {
				t.Fatalf("%d web Pods, want 2", len(pods.Items))
			}
			podCIDR := netip.MustParsePrefix("10.244.1.0/24")
			for _, p := range pods.Items {
				ip, err := netip.ParseAddr(p.Status.PodIP)
				if p.Spec.NodeName != nodeName || p.Status.Phase != corev1.PodRunning || err != nil || !podCIDR.Contains(ip) ||
					len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready || p.Status.HostIP != "172.18.0.2" {
					t.Errorf("Pod %s: node %q, phase %s, pod IP %q, host IP %q, containers %+v; want Running and ready on %s with an IP in %s",
						p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, p.Status.HostIP, p.Status.ContainerStatuses, nodeName, podCIDR)
				}
			}
		})

		t.Run("Job completes", func(t *testing.T) {
			t.Parallel()
			tmpl := podTemplate("batch")
			tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			j := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: ns},
				Spec:       batchv1.JobSpec{Completions: new(int32(2)), Parallelism: new(int32(1)), Template: tmpl},
			}
			if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// KWOK's pod-complete stage makes a Running Pod owned by a Job succeed.
			awaitObject(t, cs.BatchV1().RESTClient(), "jobs", ns, j.Name, func(j *batchv1.Job) error {
				for _, c := range j.Status.Conditions {
					if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue && j.Status.Succeeded == 2 {
						return nil
					}
				}
				return fmt.Errorf("status %+v", j.Status)
			})
		})

		t.Run("DaemonSet is ready on every Node", func(t *testing.T) {
			t.Parallel()
			ds := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels("agent")},
					Template: podTemplate("agent"),
				},
			}
			if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			awaitObject(t, cs.AppsV1().RESTClient(), "daemonsets", ns, ds.Name, func(ds *appsv1.DaemonSet) error {
				if ds.Status.DesiredNumberScheduled != 1 || ds.Status.NumberReady != 1 || ds.Status.NumberAvailable != 1 {
					return fmt.Errorf("status %+v", ds.Status)
				}
				return nil
			})
		})

		t.Run("StatefulSet has ready replicas", func(t *testing.T) {
			t.Parallel()
			ss := &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
				Spec: appsv1.StatefulSetSpec{
					Replicas: new(int32(2)),
					Selector: &metav1.LabelSelector{MatchLabels: labels("db")},
					Template: podTemplate("db"),
				},
			}
			if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, ss, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			awaitObject(t, cs.AppsV1().RESTClient(), "statefulsets", ns, ss.Name, func(ss *appsv1.StatefulSet) error {
				if ss.Status.ReadyReplicas != 2 || ss.Status.AvailableReplicas != 2 {
					return fmt.Errorf("status %+v", ss.Status)
				}
				return nil
			})
		})

		t.Run("a Pod that does not fit the Node stays Pending", func(t *testing.T) {
			t.Parallel()
			tmpl := podTemplate("big")
			tmpl.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("5") // the Node has 4
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns}, Spec: tmpl.Spec}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			awaitObject(t, cs.CoreV1().RESTClient(), "pods", ns, p.Name, func(p *corev1.Pod) error {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
						if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
							return fmt.Errorf("unschedulable Pod on %q in phase %s", p.Spec.NodeName, p.Status.Phase)
						}
						return nil
					}
				}
				return fmt.Errorf("status %+v", p.Status)
			})
		})
	})

	t.Run("a Node added later is run by KWOK and gets the DaemonSet", func(t *testing.T) {
		if err := cp.CreateSimulatedNodes(ctx, 1, nil); err != nil {
			t.Fatal(err)
		}
		awaitObject(t, cs.AppsV1().RESTClient(), "daemonsets", ns, "agent", func(ds *appsv1.DaemonSet) error {
			if ds.Status.DesiredNumberScheduled != 2 || ds.Status.NumberReady != 2 {
				return fmt.Errorf("status %+v", ds.Status)
			}
			return nil
		})
	})

	t.Run("Stop leaves nothing behind", func(t *testing.T) {
		pids, ports := cp.PIDs(), cp.Ports()
		if len(pids) != 5 || len(ports) != 5 {
			t.Fatalf("pids %v and ports %v, want 5 each (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)", pids, ports)
		}
		if err := cp.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("pid %d still running after Stop", pid)
			}
		}
		for _, port := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				t.Errorf("port %d not free after Stop: %v", port, err)
				continue
			}
			l.Close()
		}
	})
}

// TestFailedKWOKStartNamesItsLog starts a control plane whose kwok exits at once.
func TestFailedKWOKStartNamesItsLog(t *testing.T) {
	real, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{EtcdBinary, KubeAPIServerBinary, KubeControllerManagerBinary, KubeSchedulerBinary} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho 'kwok: broken on purpose' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, KWOKBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "broken")
	_, err = StartControlPlane(t.Context(), ControlPlaneOptions{Name: "broken", Dir: dir, BinDir: bin,
		Workloads: true, SimulatedNodes: 1, Log: testWriter{t}})
	if err == nil {
		t.Fatal("start succeeded with a kwok that exits")
	}
	for _, want := range []string{filepath.Join(dir, "kwok.log"), "broken on purpose", "exit status 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestSimulatedNodesNeedWorkloads(t *testing.T) {
	_, err := StartControlPlane(t.Context(), ControlPlaneOptions{Name: "static", SimulatedNodes: 1})
	if err == nil || !strings.Contains(err.Error(), "SimulatedNodes needs Workloads") {
		t.Errorf("got %v, want an error saying SimulatedNodes needs Workloads", err)
	}
	cp := &ControlPlane{Name: "static"}
	if err := cp.CreateSimulatedNodes(t.Context(), 1, nil); err == nil || !strings.Contains(err.Error(), "need Workloads") {
		t.Errorf("CreateSimulatedNodes without KWOK: got %v", err)
	}
}

package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/flotilla-dev/flotilla/core/apis/authentication/v1beta1"
	clustergatewayv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/clustergateway/v1alpha1"
	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/core/environment"
	"github.com/flotilla-dev/flotilla/core/environment/podstreams"
)

// The specs of design-23 §5.13 about upgraded and streamed Pod requests through the gateway:
// exec, port-forward and logs -f of a Pod on cluster1's simulated Node, answered by KWOK's
// debugging server in a kubelet's place (environment.Options.PodDebugging), as the managed
// ServiceAccount cluster-gateway a ManifestWork grants the Pod rights to.

var _ = Describe("exec, port-forward and logs -f through the cluster gateway", func() {
	It("exec runs a command in a Pod of cluster1 (WebSocket, SPDY fallback) and returns its stdout", func(ctx SpecContext) {
		p := debugPod(ctx, cluster1, "e2e-upgrade-exec")
		kube, cfg := gatewayKube(cluster1)
		var stdout string
		Eventually(func() error {
			var err error
			stdout, err = podstreams.Exec(ctx, cfg, kube, p.Namespace, p.Pod, "echo", "hello through the gateway")
			return err
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "exec echo in %s/%s of %s through the gateway", p.Namespace, p.Pod, cluster1)
		Expect(stdout).To(Equal("hello through the gateway\n"))

		By("each protocol alone goes through the gateway: WebSocket (kubectl's first choice) and SPDY (its fallback)")
		req := podstreams.ExecRequest(kube, p.Namespace, p.Pod, "echo", "one protocol")
		ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
		Expect(err).NotTo(HaveOccurred())
		sp, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
		Expect(err).NotTo(HaveOccurred())
		for name, e := range map[string]remotecommand.Executor{"WebSocket": ws, "SPDY": sp} {
			var out bytes.Buffer
			Expect(e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: GinkgoWriter})).To(Succeed(), "exec over %s", name)
			Expect(out.String()).To(Equal("one protocol\n"), "stdout of exec over %s", name)
		}
	}, SpecTimeout(4*time.Minute))

	It("port-forward to a Pod port of cluster1 round-trips bytes to the listener KWOK maps it to", func(ctx SpecContext) {
		p := debugPod(ctx, cluster1, "e2e-upgrade-portforward")
		kube, cfg := gatewayKube(cluster1)
		Eventually(func() error {
			return podstreams.PortForwardEcho(ctx, cfg, kube, p.Namespace, p.Pod, debugPodPort, GinkgoWriter)
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "port-forward to %s/%s:%d of %s through the gateway", p.Namespace, p.Pod, debugPodPort, cluster1)
	}, SpecTimeout(4*time.Minute))

	It("logs -f of a Pod of cluster1 streams a line appended after the stream opened", func(ctx SpecContext) {
		p := debugPod(ctx, cluster1, "e2e-upgrade-logs")
		kube, _ := gatewayKube(cluster1)
		var stream io.ReadCloser
		Eventually(func() error {
			var err error
			stream, err = podstreams.FollowLogs(ctx, kube, p.Namespace, p.Pod)
			return err
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "logs -f of %s/%s of %s through the gateway", p.Namespace, p.Pod, cluster1)
		DeferCleanup(stream.Close)
		lines := podstreams.Lines(stream)
		Eventually(lines).WithContext(ctx).WithTimeout(time.Minute).Should(Receive(Equal("before the stream")), "the log's first line")

		By("appending a line while the stream is open")
		f, err := os.OpenFile(p.LogsFile, os.O_APPEND|os.O_WRONLY, 0)
		Expect(err).NotTo(HaveOccurred())
		_, err = f.WriteString(environment.CRILogLine(time.Now(), "after the stream opened"))
		Expect(errors.Join(err, f.Close())).To(Succeed())
		Eventually(lines).WithContext(ctx).WithTimeout(time.Minute).Should(Receive(Equal("after the stream opened")),
			"the line appended to %s after logs -f opened", p.LogsFile)
	}, SpecTimeout(4*time.Minute))

	It("refuses exec on cluster1 with 403 naming the cluster to a user allowed clustergateways/proxy on cluster2 only", func(ctx SpecContext) {
		p := debugPod(ctx, cluster1, "e2e-upgrade-refused")
		const user, name = "e2e-upgrade-eve", "e2e-upgrade-cluster2-only"
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{clustergatewayv1alpha1.GroupVersion.Group}, Resources: []string{"clustergateways/proxy"},
			ResourceNames: []string{cluster2}, Verbs: []string{"get", "create", "update", "patch", "delete"},
		}}}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		for _, o := range []client.Object{role, binding} {
			Expect(hubClient.Create(ctx, o)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(hubClient.Delete(ctx, o))).To(Succeed()) }, NodeTimeout(time.Minute))
		}
		kube, cfg := gatewayKube(cluster1)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}

		By("WebSocket (GET): the hub API server answers 403")
		req := podstreams.ExecRequest(kube, p.Namespace, p.Pod, "echo", "never")
		ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
		Expect(err).NotTo(HaveOccurred())
		err = ws.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
		var upgradeErr *httpstream.UpgradeFailureError
		Expect(errors.As(err, &upgradeErr)).To(BeTrue(), "exec as %s on %s: an upgrade failure, got %v", user, cluster1, err)
		var status *apierrors.StatusError
		Expect(errors.As(upgradeErr.Cause, &status)).To(BeTrue(), "exec as %s on %s: the Status the hub answered, got %v", user, cluster1, err)
		Expect(status.ErrStatus.Code).To(BeEquivalentTo(http.StatusForbidden), "%v", err)
		Expect(status.Error()).To(ContainSubstring(`clustergateways.cluster.core.oam.dev "` + cluster1 + `" is forbidden: User "` + user +
			`" cannot get resource "clustergateways/proxy" in API group "cluster.core.oam.dev" at the cluster scope`))

		By("SPDY (POST), kubectl's fallback: refused too, naming the cluster")
		sp, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
		Expect(err).NotTo(HaveOccurred())
		err = sp.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
		Expect(err).To(MatchError(ContainSubstring(`clustergateways.cluster.core.oam.dev "` + cluster1 + `" is forbidden: User "` + user +
			`" cannot create resource "clustergateways/proxy"`)))
	}, SpecTimeout(4*time.Minute))
})

// ---- helpers of these specs ----

// debugPodPort is the Pod port KWOK forwards to the spec's loopback listener.
const debugPodPort = 8080

// debugPod creates namespace ns on cluster with a Running Pod on its simulated Node, has
// KWOK answer exec (local processes), logs (a file holding one line) and port-forward of
// debugPodPort (to a loopback line-echo listener) for it, and grants the gateway's
// ServiceAccount the Pod rights kubectl exec, logs and port-forward need through a
// ManifestWork. Everything goes when the spec ends.
func debugPod(ctx context.Context, cluster, ns string) environment.PodStreams {
	GinkgoHelper()
	cp := managedPlane(cluster)
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "creating namespace %s on %s", ns, cluster)
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))).To(Succeed())
	}, NodeTimeout(time.Minute))

	By("a ManifestWork grants the gateway's ServiceAccount exec, logs and port-forward in " + ns)
	const role = "e2e-upgrade-pod-debugging"
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: ns},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
			{RawExtension: rawJSON(&rbacv1.Role{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}},
					// A WebSocket exec or port-forward is a GET, authorized as create too.
					{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/portforward"}, Verbs: []string{"get", "create"}},
				},
			})},
			{RawExtension: rawJSON(&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: authv1beta1.AgentInstallNamespace,
					Name: clustergatewayv1alpha1.ManagedServiceAccountName}},
			})},
		}}},
	}
	Expect(hubClient.Create(ctx, work)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(hubClient.Delete(ctx, work))).To(Succeed())
	}, NodeTimeout(time.Minute))

	By("a Pod on the simulated Node, whose exec, logs and port-forward KWOK answers")
	const pod = "app"
	// Admission refuses Pods until the namespace's ServiceAccount "default" exists.
	Eventually(func() error {
		_, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: pod},
			Spec: corev1.PodSpec{NodeName: environment.SimulatedNodeName(cluster, 0),
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "creating Pod %s/%s on %s", ns, pod, cluster)
	Eventually(func() (corev1.PodPhase, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return p.Status.Phase, nil
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(corev1.PodRunning), "Pod %s/%s on %s Running (KWOK)", ns, pod, cluster)

	dir := GinkgoT().TempDir()
	s := environment.PodStreams{Namespace: ns, Pod: pod, ExecWorkDir: dir, LogsFile: filepath.Join(dir, "app.log"),
		Forwards: map[int32]string{debugPodPort: echoListener()}}
	Expect(os.WriteFile(s.LogsFile, []byte(environment.CRILogLine(time.Now(), "before the stream")), 0o600)).To(Succeed())
	Expect(cp.ServePodStreams(ctx, s)).To(Succeed())
	return s
}

// managedPlane is cluster's control plane.
func managedPlane(cluster string) *environment.ControlPlane {
	GinkgoHelper()
	for i, cp := range env.Fleet.Managed {
		if environment.ManagedClusterName(i) == cluster {
			return cp
		}
	}
	Fail("no managed cluster " + cluster)
	return nil
}

// gatewayKube is a clientset for cluster through the gateway and its config, without a
// client timeout (which would end streams; the specs' contexts bound them).
func gatewayKube(cluster string) (kubernetes.Interface, *rest.Config) {
	GinkgoHelper()
	cfg := gatewayConfig(cluster)
	cfg.Timeout = 0
	return kubernetes.NewForConfigOrDie(cfg), cfg
}

// echoListener serves podstreams.ListenEcho's line echo until the spec ends and returns its
// address.
func echoListener() string {
	GinkgoHelper()
	l, err := podstreams.ListenEcho()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(l.Close)
	return l.Addr().String()
}

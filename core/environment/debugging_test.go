package environment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/core/environment/podstreams"
)

// TestPodDebugging: with PodDebugging, logs -f, exec and port-forward of a Pod on a
// simulated Node work against the API server as against a kubelet's, KWOK answering them.
func TestPodDebugging(t *testing.T) {
	cp := startPlane(t, ControlPlaneOptions{Name: "debugging", Workloads: true, SimulatedNodes: 1, PodDebugging: true})
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	cs := clientset(t, cp.Config)
	nodeName := SimulatedNodeName(cp.Name, 0)

	node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if port := node.Status.DaemonEndpoints.KubeletEndpoint.Port; port != int32(cp.Ports()[5]) {
		t.Errorf("Node %s advertises kubelet port %d, want KWOK's debugging server's %d", nodeName, port, cp.Ports()[5])
	}

	const ns, pod = "debug", "app"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitObject(t, cs.CoreV1().RESTClient(), "serviceaccounts", ns, "default", func(*corev1.ServiceAccount) error { return nil })
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitObject(t, cs.CoreV1().RESTClient(), "pods", ns, pod, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		return nil
	})

	dir := t.TempDir()
	logsFile := filepath.Join(dir, "app.log")
	if err := os.WriteFile(logsFile, []byte(CRILogLine(time.Now(), "first line")), 0o600); err != nil {
		t.Fatal(err)
	}
	target := echoListener(t)
	if err := cp.ServePodStreams(ctx, PodStreams{Namespace: ns, Pod: pod, ExecWorkDir: dir, LogsFile: logsFile,
		Forwards: map[int32]string{8080: target}}); err != nil {
		t.Fatal(err)
	}

	t.Run("logs -f streams a line appended after it opened", func(t *testing.T) {
		lines := followLogs(t, ctx, cs, ns, pod)
		expectLine(t, lines, "first line", "the log's first line")
		f, err := os.OpenFile(logsFile, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(CRILogLine(time.Now(), "appended later")); err != nil {
			t.Fatal(err)
		}
		expectLine(t, lines, "appended later", "the line appended while following")
	})

	t.Run("exec runs the command (WebSocket, falling back to SPDY)", func(t *testing.T) {
		var stdout string
		poll(t, "exec echo in "+ns+"/"+pod, func() error {
			var err error
			stdout, err = podstreams.Exec(ctx, cp.Config, cs, ns, pod, "echo", "hello from KWOK")
			return err
		})
		if stdout != "hello from KWOK\n" {
			t.Errorf("exec stdout %q, want %q", stdout, "hello from KWOK\n")
		}
	})

	t.Run("port-forward reaches the mapped listener", func(t *testing.T) {
		poll(t, "port-forward to "+ns+"/"+pod+":8080", func() error {
			return podstreams.PortForwardEcho(ctx, cp.Config, cs, ns, pod, 8080, io.Discard)
		})
	})
}

// followLogs opens logs -f of ns/pod and returns its lines as they arrive (closed at the end).
func followLogs(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, pod string) <-chan string {
	t.Helper()
	var stream io.ReadCloser
	poll(t, "opening logs -f of "+ns+"/"+pod, func() error {
		var err error
		stream, err = podstreams.FollowLogs(ctx, cs, ns, pod)
		return err
	})
	t.Cleanup(func() { stream.Close() })
	return podstreams.Lines(stream)
}

// expectLine waits up to a minute for the next line, which must be want.
func expectLine(t *testing.T, lines <-chan string, want, what string) {
	t.Helper()
	select {
	case got, ok := <-lines:
		if !ok {
			t.Fatalf("waiting for %s %q: the log stream ended", what, want)
		}
		if got != want {
			t.Fatalf("%s: got %q, want %q", what, got, want)
		}
	case <-time.After(time.Minute):
		t.Fatalf("waiting for %s %q: nothing within a minute", what, want)
	}
}

// echoListener is podstreams.ListenEcho's address, closed when t ends.
func echoListener(t *testing.T) string {
	t.Helper()
	l, err := podstreams.ListenEcho()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// TestKWOKCRDsArePinned: the embedded KWOK CRDs are those of the KWOK version tools/kwok
// pins, and they decode. The comparison needs that module in the module cache (make kwok
// puts it there); without it only the decoding is checked.
func TestKWOKCRDsArePinned(t *testing.T) {
	objs, err := kwokCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Spec.Names.Kind)
	}
	for _, k := range kwokDebuggingKinds {
		if !slices.Contains(kinds, k) {
			t.Errorf("no embedded CRD of kind %s (have %v)", k, kinds)
		}
	}
	gomod, err := os.ReadFile(filepath.Join("..", "..", "tools", "kwok", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^require sigs\.k8s\.io/kwok (v\S+)$`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("tools/kwok/go.mod: no `require sigs.k8s.io/kwok <version>` line")
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	pinned := filepath.Join(strings.TrimSpace(string(out)), "sigs.k8s.io", "kwok@"+string(m[1]), "kustomize", "crd", "bases")
	if _, err := os.Stat(pinned); err != nil {
		t.Skipf("the pinned KWOK module is not in the module cache (%v); run `make kwok`", err)
	}
	entries, err := kwokCRDFiles.ReadDir("kwok-crds")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(pinned, e.Name()))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		got, _ := kwokCRDFiles.ReadFile("kwok-crds/" + e.Name())
		if !bytes.Equal(got, want) {
			t.Errorf("kwok-crds/%s differs from %s: copy it again", e.Name(), filepath.Join(pinned, e.Name()))
		}
	}
}

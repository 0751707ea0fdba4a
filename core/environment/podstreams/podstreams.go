// Package podstreams is the client side of kubectl exec, port-forward and logs -f, for tests
// that check those streams reach a Pod (directly or through a proxy such as the cluster
// gateway): the WebSocket transport with kubectl's SPDY fallback, and a line-echo listener to
// forward to. It imports client-go only, so core/environment's own tests can use it.
package podstreams

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// Timeout bounds one Exec or PortForwardEcho, within its caller's context.
const Timeout = 30 * time.Second

// ExecRequest is the exec request of command in ns/pod, as kubectl builds it.
func ExecRequest(kube kubernetes.Interface, ns, pod string, command ...string) *rest.Request {
	return kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
}

// Exec runs command in ns/pod as kubectl exec does (WebSocket, falling back to SPDY) and
// returns its stdout.
func Exec(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, ns, pod string, command ...string) (string, error) {
	req := ExecRequest(kube, ns, pod, command...)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
	if err != nil {
		return "", err
	}
	sp, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return "", err
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, sp, httpstream.IsUpgradeFailure)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec %v in %s/%s (stderr %q): %w", command, ns, pod, stderr.String(), err)
	}
	return stdout.String(), nil
}

// PortForwardEcho forwards a local port to ns/pod's port as kubectl port-forward does (SPDY
// over a WebSocket tunnel, falling back to SPDY), sends a line through it and expects the echo
// of a listener such as ListenEcho's back. The forwarder's progress goes to out.
func PortForwardEcho(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, ns, pod string, port int, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	u := kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return err
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg)
	if err != nil {
		return err
	}
	dialer := portforward.NewFallbackDialerForStreaming(wsDialer, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, out, out)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		return fmt.Errorf("port-forward to %s/%s:%d ended before it was ready: %w", ns, pod, port, err)
	case <-ctx.Done():
		return fmt.Errorf("port-forward to %s/%s:%d not ready: %w", ns, pod, port, ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	const ping = "ping through the forwarded port"
	if _, err := io.WriteString(conn, ping+"\n"); err != nil {
		return err
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the echo through the forwarded port: %w", err)
	}
	if want := "echo: " + ping + "\n"; got != want {
		return fmt.Errorf("echo through the forwarded port: got %q, want %q", got, want)
	}
	return nil
}

// ListenEcho serves, on a loopback port, a line echo ("echo: " + line) per connection, each
// connection for a minute at most, until the listener is closed.
func ListenEcho() (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(time.Minute))
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, "echo: "+strings.TrimSuffix(line, "\n")+"\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l, nil
}

// FollowLogs opens logs -f of ns/pod's (only) container; the caller closes the stream.
func FollowLogs(ctx context.Context, kube kubernetes.Interface, ns, pod string) (io.ReadCloser, error) {
	return kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
}

// Lines sends r's lines as they arrive and is closed when r ends (or is closed).
func Lines(r io.Reader) <-chan string {
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(r)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	return lines
}

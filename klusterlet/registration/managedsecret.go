package registration

import (
	"bytes"
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// maxManagedKubeconfigBytes caps the managed kubeconfig read from the Secret: a kubeconfig
// with a token or certificates is a few kilobytes.
const maxManagedKubeconfigBytes = 1 << 20

// runFromSecret runs the agent's sessions with the managed cluster kubeconfig of the Secret
// Config.ManagedKubeconfigSecret until ctx ends: it watches the Secret and restarts the
// sessions when the kubeconfig changes (a rotated token, another user). A missing or unusable
// Secret is recorded and read again with backoff; sessions already running with an earlier
// kubeconfig go on meanwhile.
func (a *Agent) runFromSecret(ctx context.Context) {
	ns, name := a.cfg.AgentNamespace, a.cfg.ManagedKubeconfigSecret
	changed := newNotifier()
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		watchForever(watchCtx, a.log, a.cfg.Clock, a.backoff(), "secret "+ns+"/"+name+" on the management cluster",
			func(ctx context.Context) (watch.Interface, error) {
				return a.management.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{
					FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
				})
			},
			func(watch.Event) { changed.notify() })
	}()
	var (
		current  []byte
		stopRun  context.CancelFunc
		runDone  chan struct{}
		b        = a.backoff()
		sessions = func() {
			if stopRun != nil {
				stopRun()
				<-runDone
				stopRun = nil
			}
		}
	)
	defer func() {
		sessions()
		stopWatch()
		<-watchDone
	}()
	for ctx.Err() == nil {
		data, cfg, err := a.readManagedKubeconfig(ctx)
		if err == nil && !bytes.Equal(data, current) {
			sessions() // the clients change: no session may use the old ones
			if err = a.setManaged(cfg, nil); err != nil {
				err = fmt.Errorf("secret %s/%s key %s: %w", ns, name, KubeconfigKey, err)
			}
			if err == nil {
				current = data
				runCtx, cancel := context.WithCancel(ctx)
				stopRun, runDone = cancel, make(chan struct{})
				go func() {
					defer close(runDone)
					a.runSessions(runCtx)
				}()
				a.update(func(s *State) { s.ManagedKubeconfigLoads++ })
				a.log.Info("Managed cluster kubeconfig loaded; agent sessions started with it",
					"secret", ns+"/"+name, "server", cfg.Host)
			} else {
				current = nil
			}
		}
		msg := ""
		if err != nil && ctx.Err() == nil {
			msg = err.Error()
			a.recordError(err)
		}
		a.update(func(s *State) { s.ManagedKubeconfigError = msg })
		wait := a.cfg.StatusSyncPeriod // a safety net for a missed event
		if err != nil {
			wait = b.Next()
		} else {
			b.Reset()
		}
		t := a.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-changed:
		case <-t.C():
		}
		t.Stop()
	}
}

// readManagedKubeconfig reads and parses the managed cluster's kubeconfig from its Secret.
func (a *Agent) readManagedKubeconfig(ctx context.Context) ([]byte, *rest.Config, error) {
	data, cfg, err := ReadManagedKubeconfig(ctx, a.management.CoreV1(), a.cfg.AgentNamespace, a.cfg.ManagedKubeconfigSecret)
	if err != nil {
		return nil, nil, err
	}
	return data, a.cfg.ManagedRate(cfg), nil
}

// ReadManagedKubeconfig reads and parses the managed cluster's kubeconfig from Secret ns/name
// (key KubeconfigKey) on the management cluster: capped in size, and refused when its user
// runs a credential plugin. The work-only agent of Hosted mode reads its own Secret with it.
func ReadManagedKubeconfig(ctx context.Context, secrets corev1client.SecretsGetter, ns, name string) ([]byte, *rest.Config, error) {
	source := fmt.Sprintf("secret %s/%s key %s", ns, name, KubeconfigKey)
	s, err := secrets.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("managed cluster kubeconfig %s on the management cluster: the secret does not exist", source)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading managed cluster kubeconfig %s on the management cluster: %w", source, err)
	}
	data := s.Data[KubeconfigKey]
	switch {
	case len(data) == 0:
		return nil, nil, fmt.Errorf("managed cluster kubeconfig %s is empty or missing", source)
	case len(data) > maxManagedKubeconfigBytes:
		return nil, nil, fmt.Errorf("managed cluster kubeconfig %s is %d bytes, over the limit of %d", source, len(data), maxManagedKubeconfigBytes)
	}
	source = "managed cluster kubeconfig " + source
	if err := noPlugins(data, source); err != nil {
		return nil, nil, err
	}
	cfg, err := RESTConfigFromKubeconfig(data, source)
	if err != nil {
		return nil, nil, err
	}
	return data, cfg, nil
}

// noPlugins refuses a kubeconfig whose user runs a credential plugin: whoever may write the
// Secret must not be able to run commands in the agent.
func noPlugins(data []byte, source string) error {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", source, err)
	}
	for name, u := range kc.AuthInfos {
		if u.Exec != nil || u.AuthProvider != nil {
			return fmt.Errorf("kubeconfig %s: user %q uses a credential plugin (exec or auth-provider), which the agent does not run; use a token or client certificate", source, name)
		}
	}
	return nil
}

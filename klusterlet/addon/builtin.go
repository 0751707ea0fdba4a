package addon

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	addonv1alpha1 "github.com/flotilla-dev/flotilla/core/apis/addon/v1alpha1"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// BuiltinLabel ("true") marks the ManagedClusterAddOns of add-ons whose agent is built into
// the klusterlet (Config.Builtins); the hub's built-in add-on reconciler sets it, with
// status.namespace. hub/addon/builtin.Label is the same key.
const BuiltinLabel = "addon.flotilla.dev/builtin"

// builtinWanted reports whether the built-in agent of mca's add-on should run: one is
// configured, the hub marks the add-on built-in and decided its namespace, it is not being
// deleted, and it is not a template add-on (an AddOnTemplate or a Wasm template wins: its
// own agent is deployed by works).
func (a *Agent) builtinWanted(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	if mca == nil || a.cfg.Builtins[mca.Name] == nil || mca.Labels[BuiltinLabel] != "true" ||
		mca.Status.Namespace == "" || !mca.DeletionTimestamp.IsZero() {
		return false
	}
	for _, ref := range mca.Status.ConfigReferences {
		if (ref.Group == addonv1alpha1.GroupVersion.Group && ref.Resource == "addontemplates") ||
			(ref.Group == "flotilla.dev" && ref.Resource == "wasmplugins") {
			return false
		}
	}
	return true
}

// builtinKey is what a running built-in agent was started with: another key restarts it.
func builtinKey(mca *addonv1alpha1.ManagedClusterAddOn) string {
	return mca.Status.Namespace + "|" + fmt.Sprint(needsHubKubeconfig(mca))
}

// needsHubKubeconfig reports whether the add-on registers a hub client certificate, whose
// <addon>-hub-kubeconfig the built-in agent then waits for.
func needsHubKubeconfig(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	for _, r := range mca.Status.Registrations {
		if r.SignerName == certificatesv1.KubeAPIServerClientSignerName {
			return true
		}
	}
	return false
}

// syncBuiltin starts, restarts or stops the built-in agent of add-on name (mca nil: gone).
func (a *Agent) syncBuiltin(ctx context.Context, name string, mca *addonv1alpha1.ManagedClusterAddOn) {
	r, running := a.builtins[name]
	if !a.builtinWanted(mca) {
		if running {
			r.stop()
			delete(a.builtins, name)
			a.log.Info("Stopped built-in add-on agent", "addon", name)
		}
		return
	}
	key := builtinKey(mca)
	if running && r.namespace == key {
		return
	}
	if running {
		r.stop()
	}
	ns, hub := mca.Status.Namespace, needsHubKubeconfig(mca)
	agent := a.cfg.Builtins[name]
	r = a.start(ctx, func(ctx context.Context) { a.builtinLoop(ctx, name, ns, hub, agent) })
	r.namespace = key
	a.builtins[name] = r
	a.log.Info("Started built-in add-on agent", "addon", name, "namespace", ns)
}

// builtinLoop runs one built-in agent until ctx ends: it creates the install namespace,
// waits for the add-on's hub kubeconfig when it registers one, and runs the agent with its
// environment. The agent is restarted with a new hub identity when the certificate is
// renewed, and after a backoff when it returns early.
func (a *Agent) builtinLoop(ctx context.Context, name, ns string, needsHub bool, agent BuiltinAgent) {
	log := a.log.WithValues("addon", name)
	lease := newLeaseRenewer(a, name, ns)
	go lease.run(ctx)
	secrets := newSecretWatch(a, ns, SecretName(name, certificatesv1.KubeAPIServerClientSignerName))
	if needsHub {
		go secrets.run(ctx)
	}
	b := a.cfg.backoff()
	wait := func(d time.Duration) bool {
		t := a.cfg.Clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
			return true
		}
	}
	for ctx.Err() == nil {
		if err := a.ensureNamespace(ctx, ns); err != nil {
			log.Info("Creating the built-in add-on's namespace failed; retrying", "error", err.Error())
			if !wait(b.Next()) {
				return
			}
			continue
		}
		var hubCfg *rest.Config
		var cert []byte
		if needsHub {
			var err error
			if hubCfg, cert, err = secrets.config(ctx, a.cfg.HubEndpoint); err != nil {
				if ctx.Err() == nil {
					log.Info("Reading the built-in add-on's hub kubeconfig failed; retrying", "error", err.Error())
					wait(b.Next())
				}
				continue
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		env := BuiltinEnv{
			ClusterName: a.cfg.ClusterName, InstallNamespace: ns, HubConfig: hubCfg, HubEndpoint: a.cfg.HubEndpoint,
			ManagedConfig: rest.CopyConfig(a.cfg.ManagedConfig), Healthy: lease.set, Logger: log,
		}
		go func() { done <- agent.Run(runCtx, env) }()
		started := a.cfg.Clock.Now()
		var err error
		restart := false
		for !restart {
			select {
			case err = <-done:
				restart = true
			case <-secrets.changed:
				if needsHub && !secrets.same(cert) {
					log.Info("Hub client certificate renewed; restarting the built-in add-on agent")
					cancel()
					err = <-done
					restart = true
				}
			}
		}
		cancel()
		lease.set(false)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Error(err, "Built-in add-on agent stopped; restarting")
		}
		if a.cfg.Clock.Since(started) > a.cfg.RetryMax {
			b.Reset()
		}
		if !wait(b.Next()) {
			return
		}
	}
}

// ensureNamespace creates the install namespace unless it exists (as an add-on's manifests
// would).
func (a *Agent) ensureNamespace(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := a.managed.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	_, err := a.managed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// secretWatch follows one add-on's hub kubeconfig Secret.
type secretWatch struct {
	a        *Agent
	ns, name string
	changed  chan struct{}
	mu       sync.Mutex
	secret   *corev1.Secret
	synced   chan struct{}
}

func newSecretWatch(a *Agent, ns, name string) *secretWatch {
	return &secretWatch{a: a, ns: ns, name: name, changed: make(chan struct{}, 1), synced: make(chan struct{})}
}

func (w *secretWatch) run(ctx context.Context) {
	set := func(obj any) {
		s, _ := obj.(*corev1.Secret)
		w.mu.Lock()
		w.secret = s
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: toolscache.NewListWatchFromClient(w.a.managed.CoreV1().RESTClient(), "secrets", w.ns,
			fields.OneTermEqualSelector("metadata.name", w.name)),
		ObjectType: &corev1.Secret{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: set, UpdateFunc: func(_, o any) { set(o) }, DeleteFunc: func(any) { set(nil) },
		},
	})
	go func() {
		if toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			close(w.synced)
		}
	}()
	informer.RunWithContext(ctx)
}

// config waits for the Secret to hold a certificate and returns the hub config it makes, and
// the certificate.
func (w *secretWatch) config(ctx context.Context, ep registration.HubEndpoint) (*rest.Config, []byte, error) {
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-w.synced:
	}
	for {
		w.mu.Lock()
		s := w.secret
		w.mu.Unlock()
		if s != nil && len(s.Data[TLSCertKey]) > 0 && len(s.Data[TLSKeyKey]) > 0 {
			data, err := registration.BuildHubKubeconfig(ep, &registration.Credentials{CertPEM: s.Data[TLSCertKey], KeyPEM: s.Data[TLSKeyKey]})
			if err != nil {
				return nil, nil, err
			}
			cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
			if err != nil {
				return nil, nil, fmt.Errorf("hub kubeconfig Secret %s/%s: %w", w.ns, w.name, err)
			}
			return cfg, s.Data[TLSCertKey], nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-w.changed:
		}
	}
}

// same reports whether the Secret still holds cert.
func (w *secretWatch) same(cert []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.secret != nil && bytes.Equal(w.secret.Data[TLSCertKey], cert)
}

// leaseRenewer renews the add-on's Lease in its install namespace every lease duration, while
// the agent says it is healthy; the klusterlet's Lease health check (leaseLoop) turns that into
// the Available condition.
type leaseRenewer struct {
	a         *Agent
	addon, ns string
	mu        sync.Mutex
	healthy   bool
	kick      chan struct{}
}

func newLeaseRenewer(a *Agent, addon, ns string) *leaseRenewer {
	return &leaseRenewer{a: a, addon: addon, ns: ns, kick: make(chan struct{}, 1)}
}

// set is the agent's BuiltinEnv.Healthy.
func (l *leaseRenewer) set(healthy bool) {
	l.mu.Lock()
	changed := l.healthy != healthy
	l.healthy = healthy
	l.mu.Unlock()
	if changed {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *leaseRenewer) run(ctx context.Context) {
	period := time.Duration(l.a.cfg.LeaseDurationSeconds) * time.Second
	for ctx.Err() == nil {
		l.mu.Lock()
		healthy := l.healthy
		l.mu.Unlock()
		next := period
		if healthy {
			if err := l.renew(ctx); err != nil && ctx.Err() == nil {
				l.a.log.Info("Renewing the built-in add-on's Lease failed; retrying", "addon", l.addon, "error", err.Error())
				next = min(period, l.a.cfg.RetryInitial)
			}
		}
		t := l.a.cfg.Clock.NewTimer(next)
		select {
		case <-ctx.Done():
		case <-l.kick:
		case <-t.C():
		}
		t.Stop()
	}
}

// renew sets the Lease's renewTime to now, creating the Lease if needed.
func (l *leaseRenewer) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leases := l.a.managed.CoordinationV1().Leases(l.ns)
	now := metav1.NewMicroTime(l.a.cfg.Clock.Now())
	secs := l.a.cfg.LeaseDurationSeconds
	lease, err := leases.Get(ctx, l.addon, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: l.addon, Namespace: l.ns},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &l.addon, LeaseDurationSeconds: &secs, RenewTime: &now},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Lease %s/%s: %w", l.ns, l.addon, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Lease %s/%s: %w", l.ns, l.addon, err)
	}
	lease.Spec.RenewTime = &now
	lease.Spec.LeaseDurationSeconds = &secs
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", l.ns, l.addon, err)
	}
	return nil
}

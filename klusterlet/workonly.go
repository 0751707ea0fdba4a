package klusterlet

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/flotilla-dev/flotilla/core/backoff"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// DefaultWorkLeaderElectionName is the work-only agent's Lease (OCM's
// <klusterlet>-work-agent-lock), apart from the registration agent's.
const DefaultWorkLeaderElectionName = "klusterlet-work-agent-lock"

// workOnly runs the work agent alone, from the hub kubeconfig secret a registration agent in
// another process (Options.Work.Disabled) keeps: OCM's separate work agent Deployment.
type workOnly struct {
	kube      kubernetes.Interface
	namespace string
	name      string
	// cluster is Registration.ClusterName: when set, the secret must be that cluster's.
	cluster  string
	sessOpts registration.SessionOptions
	// managed, management and managedMapper complete each session read from the secret.
	managed, management *rest.Config
	managedMapper       meta.RESTMapper
	// managedSecret, when set, names the Secret in namespace on the management cluster that
	// holds the managed cluster's kubeconfig (Hosted mode's external-managed-kubeconfig-work),
	// read with registration's reader instead of managed; a change starts a new session.
	managedSecret string
	// managedErr is why managedSecret could not be used when last read ("" once it was).
	managedErr atomic.Pointer[string]
	run        func(context.Context, registration.Session) error
	retryMin   time.Duration
	retryMax   time.Duration
	log        logr.Logger
	// running is true while a work session runs from the secret (readiness).
	running atomic.Bool
	// cert is the running session's client certificate.
	cert atomic.Pointer[x509.Certificate]
}

// HubCertificate is the client certificate a work-only agent's running session uses; nil while
// none runs, and for an agent that runs registration.
func (a *Agent) HubCertificate() *x509.Certificate {
	if a.workOnly == nil {
		return nil
	}
	return a.workOnly.cert.Load()
}

// newWorkOnly sets a up as a work-only agent; cfg is opts.Registration with the shared
// scheme and mappers filled in.
func (a *Agent) newWorkOnly(opts Options, cfg registration.Config) (*Agent, error) {
	if opts.Work.Disabled {
		return nil, errors.New("klusterlet: Work.Only (--work-only) and Work.Disabled (--disable-work-agent) exclude each other")
	}
	switch {
	case cfg.ManagedKubeconfigSecret != "" && cfg.ManagedConfig != nil:
		return nil, errors.New("klusterlet: the work-only agent takes its managed cluster from Registration.ManagedConfig (--managed-kubeconfig) or from the secret Registration.ManagedKubeconfigSecret (--managed-kubeconfig-secret), not both")
	case cfg.ManagedKubeconfigSecret != "" && cfg.ManagementConfig == nil:
		return nil, errors.New("klusterlet: the work-only agent with Registration.ManagedKubeconfigSecret needs Registration.ManagementConfig, the cluster the secret is on")
	case cfg.ManagedKubeconfigSecret == "" && cfg.ManagedConfig == nil:
		return nil, errors.New("klusterlet: the work-only agent needs Registration.ManagedConfig or Registration.ManagedKubeconfigSecret")
	}
	// The hub kubeconfig secret is where the agents run (the management cluster in Hosted mode).
	management := cmp.Or(cfg.ManagementConfig, cfg.ManagedConfig)
	kube, err := kubernetes.NewForConfig(management)
	if err != nil {
		return nil, fmt.Errorf("klusterlet: management cluster client: %w", err)
	}
	log := cfg.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	w := &workOnly{
		kube:      kube,
		namespace: cmp.Or(cfg.AgentNamespace, registration.DefaultAgentNamespace),
		name:      cmp.Or(cfg.HubKubeconfigSecret, registration.DefaultHubKubeconfigSecret),
		cluster:   cfg.ClusterName,
		sessOpts:  registration.SessionOptions{Dial: cfg.HubDial, Scheme: cfg.Scheme, HubMapper: cfg.HubMapper, Logger: log},
		run:       a.workSession(opts, cfg.ManagedMapper),
		retryMin:  cmp.Or(cfg.RetryInitial, registration.DefaultRetryInitial),
		retryMax:  cmp.Or(cfg.RetryMax, registration.DefaultRetryMax),
		log:       log.WithName("work-only"),
	}
	w.managed, w.management, w.managedMapper = cfg.ManagedConfig, management, cfg.ManagedMapper
	w.managedSecret = cfg.ManagedKubeconfigSecret
	w.managedErr.Store(new(string))
	a.workOnly = w
	opts.LeaderElection.Name = cmp.Or(opts.LeaderElection.Name, DefaultWorkLeaderElectionName)
	if a.life, err = newLifecycle(opts); err != nil {
		return nil, fmt.Errorf("klusterlet: %w", err)
	}
	a.life.kubeconfigLoaded = w.running.Load
	a.life.notLoaded = fmt.Sprintf("the work agent has not read the hub kubeconfig secret %s/%s yet", w.namespace, w.name)
	a.life.managedKubeconfigError = func() string { return *w.managedErr.Load() }
	return a, nil
}

// ref names the secret in logs.
func (w *workOnly) ref() string { return "secret " + w.namespace + "/" + w.name }

// Run runs work sessions from the secret until ctx ends: it waits for the secret, starts a
// session from it, and starts a new one when its kubeconfig, certificate or identity change
// (the registration agent rotated the certificate or registered again).
func (w *workOnly) Run(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	// One watch per secret, each by name: the agent may read only its own secrets.
	watched := []string{w.name}
	if w.managedSecret != "" {
		watched = append(watched, w.managedSecret)
	}
	for _, name := range watched {
		factory := informers.NewSharedInformerFactoryWithOptions(w.kube, 0, informers.WithNamespace(w.namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			}))
		informer := factory.Core().V1().Secrets().Informer()
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { notify() }, UpdateFunc: func(any, any) { notify() }, DeleteFunc: func(any) { notify() },
		}); err != nil {
			return fmt.Errorf("work-only agent: watching secret %s/%s: %w", w.namespace, name, err)
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
	}

	b := backoff.New(w.retryMin, w.retryMax)
	lastWait := ""
	for ctx.Err() == nil {
		sec, managed, sess, conn, err := w.read(ctx)
		if err != nil {
			w.running.Store(false)
			if msg := err.Error(); msg != lastWait {
				w.log.Info("Waiting for the hub kubeconfig secret the registration agent writes", "secret", w.namespace+"/"+w.name, "reason", msg)
				lastWait = msg
			}
			// A change of the secret wakes the wait; a failed read is retried with backoff.
			t := time.NewTimer(b.Next())
			select {
			case <-ctx.Done():
			case <-changed:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		lastWait = ""
		b.Reset()
		w.running.Store(true)
		w.cert.Store(conn.Credentials().Leaf)
		w.log.Info("Starting the work agent with the hub kubeconfig secret", "secret", w.namespace+"/"+w.name,
			"cluster", sess.ClusterName, "agent", sess.AgentName)
		err = w.serve(ctx, sec, managed, sess, changed)
		conn.Close()
		w.cert.Store(nil)
		if err != nil {
			w.log.Error(err, "Work agent stopped; starting again", "secret", w.namespace+"/"+w.name)
			if !backoff.Sleep(ctx, clock.RealClock{}, b.Next()) {
				break
			}
		}
	}
	return nil
}

// read reads the secret, the managed kubeconfig (from managedSecret, nil without one) and the
// session they make; the session's connection is the caller's to close once the session ends.
func (w *workOnly) read(ctx context.Context) (*registration.HubSecret, []byte, registration.Session, *registration.HubConnection, error) {
	managedData, managed, err := w.readManaged(ctx)
	if err != nil {
		return nil, nil, registration.Session{}, nil, err
	}
	sec, err := registration.ReadHubSecret(ctx, w.kube.CoreV1(), w.namespace, w.name)
	if err != nil {
		return nil, nil, registration.Session{}, nil, err
	}
	if w.cluster != "" && sec.Exists() && sec.ClusterName != "" && sec.ClusterName != w.cluster {
		return nil, nil, registration.Session{}, nil, fmt.Errorf("%s holds cluster %q, not %q (Registration.ClusterName)", w.ref(), sec.ClusterName, w.cluster)
	}
	sess, conn, err := registration.SessionFromHubSecret(sec, w.sessOpts)
	if err != nil {
		return nil, nil, registration.Session{}, nil, err
	}
	sess.ManagedConfig, sess.ManagementConfig, sess.ManagedMapper = managed, w.management, w.managedMapper
	return sec, managedData, sess, conn, nil
}

// readManaged returns the managed cluster's config: w.managed, or the kubeconfig in
// managedSecret (its bytes too), recording why that could not be used for readiness.
func (w *workOnly) readManaged(ctx context.Context) ([]byte, *rest.Config, error) {
	if w.managedSecret == "" {
		return nil, w.managed, nil
	}
	data, cfg, err := registration.ReadManagedKubeconfig(ctx, w.kube.CoreV1(), w.namespace, w.managedSecret)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	w.managedErr.Store(&msg)
	return data, cfg, err
}

// serve runs one work session until ctx ends, the session fails (its error), or the secret's
// credentials change (nil: the caller starts a new session).
func (w *workOnly) serve(ctx context.Context, sec *registration.HubSecret, managed []byte, sess registration.Session, changed <-chan struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.run(ctx, sess) }()
	for {
		select {
		case err := <-done:
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				err = errors.New("the work agent returned")
			}
			return err
		case <-changed:
			// An unusable managed kubeconfig is reported (readiness) while the session goes
			// on with the last usable one, as registration does.
			curManaged, _, err := w.readManaged(ctx)
			if err != nil {
				w.log.Error(err, "Keeping the work agent on the last usable managed cluster kubeconfig")
				continue
			}
			cur, err := registration.ReadHubSecret(ctx, w.kube.CoreV1(), w.namespace, w.name)
			if err == nil && sameCredentials(sec, cur) && bytes.Equal(managed, curManaged) {
				continue
			}
			w.log.Info("The hub kubeconfig or managed kubeconfig secret changed; restarting the work agent",
				"secret", w.namespace+"/"+w.name, "managedSecret", w.managedSecret)
			cancel()
			<-done
			return nil
		}
	}
}

// sameCredentials reports that b holds the identity, kubeconfig and certificate of a.
func sameCredentials(a, b *registration.HubSecret) bool {
	return b.Exists() && a.ClusterName == b.ClusterName && a.AgentName == b.AgentName &&
		bytes.Equal(a.Kubeconfig, b.Kubeconfig) && bytes.Equal(a.CertPEM, b.CertPEM) && bytes.Equal(a.KeyPEM, b.KeyPEM)
}

package operator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1 "github.com/flotilla-dev/flotilla/core/apis/operator/v1"
	"github.com/flotilla-dev/flotilla/core/apply"
	"github.com/flotilla-dev/flotilla/core/operatorrun"
	"github.com/flotilla-dev/flotilla/klusterlet"
	"github.com/flotilla-dev/flotilla/klusterlet/registration"
)

// FieldManager owns the Klusterlet status fields the klusterlet writes.
const FieldManager = apply.FieldManagerPrefix + "klusterlet-operator"

// DefaultStatusResync is how often the hub connection is checked again without a change seen
// (OCM's operator checks it every 30 s).
const DefaultStatusResync = 30 * time.Second

// addonNamespace is where the klusterlet puts add-on agents (klusterlet.AddOnNamespace).
const addonNamespace = klusterlet.AddOnNamespace

// The CRDs of a managed cluster (core/environment.ManagedClusterCRDs).
var managedClusterCRDs = []string{
	"clusterclaims.cluster.open-cluster-management.io",
	"appliedmanifestworks.work.open-cluster-management.io",
	"klusterlets.operator.open-cluster-management.io",
}

// statusWriter writes the Klusterlet's status while the agents run (klusterlet.Options.OnRun:
// in the leader only), and only while the Klusterlet asks for what they run with.
type statusWriter struct {
	watch *watch
	c     client.Client
	// base are the flags' options, opts those the agents run with (base with the Klusterlet's
	// settings over it), running what of them the Klusterlet sets.
	base, opts klusterlet.Options
	running    running
	resync     time.Duration
	log        logr.Logger
}

// run writes the status now and after every change, of the Klusterlet or of the agent's
// state, until ctx ends.
func (s *statusWriter) run(ctx context.Context, a *klusterlet.Agent) {
	last := fingerprint(a)
	changed := func() bool {
		f := fingerprint(a)
		if f == last {
			return false
		}
		last = f
		return true
	}
	operatorrun.StatusLoop(ctx, s.watch, s.resync, changed, s.log, func(ctx context.Context) error { return s.write(ctx, a) })
}

// agentState is what of the registration agent's state the status follows.
type agentState struct {
	phase            registration.Phase
	accepted, joined bool
	notAfter         time.Time
}

func fingerprint(a *klusterlet.Agent) agentState {
	st := a.Registration.State()
	return agentState{phase: st.Phase, accepted: st.Accepted, joined: st.Joined, notAfter: st.CertificateNotAfter}
}

// write applies the status the Klusterlet should have, unless it has it already.
func (s *statusWriter) write(ctx context.Context, a *klusterlet.Agent) error {
	k, found, err := s.watch.Get(ctx)
	if err != nil || !found {
		return err
	}
	set := readSettings(k)
	if _, r := set.apply(s.base); !r.equal(s.running) {
		return nil // a restart is coming
	}
	_, generations, err := operatorrun.DeploymentStatus(ctx, s.c, s.watch.Deployment())
	if err != nil {
		return err
	}
	conds := []metav1.Condition{
		{Type: operatorv1.ConditionKlusterletApplied, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonKlusterletApplied,
			Message: "Klusterlet components are applied: the agents run with " + s.running.describe()},
		set.gates.Condition(),
		{Type: operatorv1.ConditionKlusterletAvailable, Status: metav1.ConditionTrue, Reason: operatorv1.ReasonKlusterletAvailable,
			Message: s.available()},
		s.hubConnection(ctx, a),
	}
	have := operatorrun.Status{ObservedGeneration: k.Status.ObservedGeneration, Conditions: k.Status.Conditions,
		Generations: k.Status.Generations, RelatedResources: k.Status.RelatedResources}
	want := operatorrun.Status{ObservedGeneration: k.Generation, Conditions: conds, Generations: generations, RelatedResources: s.relatedResources()}
	if err := operatorrun.ApplyStatus(ctx, s.c, k, FieldManager, have, want); err != nil {
		return fmt.Errorf("Klusterlet %s status: %w", k.Name, err)
	}
	return nil
}

// available says which agents run.
func (s *statusWriter) available() string {
	agents := "the registration agent runs"
	switch {
	case !s.opts.Work.Disabled && !s.opts.AddOn.Disabled:
		agents += "; the work and add-on agents run once the hub accepts the cluster"
	case !s.opts.Work.Disabled:
		agents += "; the work agent runs once the hub accepts the cluster"
	case !s.opts.AddOn.Disabled:
		agents += "; the add-on agent runs once the hub accepts the cluster"
	}
	return agents
}

// hubConnection is HubConnectionDegraded of the running agents (HubConnection), with the
// bootstrap kubeconfig's state while the agent has no hub identity.
func (s *statusWriter) hubConnection(ctx context.Context, a *klusterlet.Agent) metav1.Condition {
	r := s.opts.Registration
	return HubConnection(ctx, s.c, s.running.namespace, cmp.Or(r.HubKubeconfigSecret, registration.DefaultHubKubeconfigSecret),
		s.running.clusterName, r.HubDial, func(ctx context.Context) (string, string) { return s.bootstrap(ctx, a) })
}

// HubConnection is HubConnectionDegraded, checked as OCM's operator does: the hub kubeconfig
// Secret ns/name (read with c), then a SelfSubjectAccessReview with its identity (through
// dial, when set) for what only an accepted cluster may do, updating its ManagedCluster's
// status. bootstrap, when set, describes the bootstrap kubeconfig ("" once the agent needs it
// no more); a degraded condition puts its reason and message first. The klusterlet's own
// status writer and the klusterlet operator both use it.
func HubConnection(ctx context.Context, c client.Reader, ns, name, clusterName string, dial registration.DialFunc,
	bootstrap func(context.Context) (reason, msg string)) metav1.Condition {
	degraded := func(reason, msg string) metav1.Condition {
		if bootstrap != nil {
			if breason, bmsg := bootstrap(ctx); breason != "" {
				reason, msg = breason+","+reason, bmsg+"\n"+msg
			}
		}
		return metav1.Condition{Type: operatorv1.ConditionHubConnectionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	}
	sec := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		return degraded(operatorv1.ReasonHubKubeConfigSecretMissing, fmt.Sprintf("Failed to get hub kubeconfig secret %s/%s: %v", ns, name, err))
	}
	kubeconfig := sec.Data[registration.KubeconfigKey]
	if len(kubeconfig) == 0 {
		return degraded(operatorv1.ReasonHubKubeConfigMissing, fmt.Sprintf("Hub kubeconfig secret %s/%s has no kubeconfig yet: the agent's CSR "+
			"must be approved by the hub admin (flotilla accept --clusters %s)", ns, name, clusterName))
	}
	cluster := cmp.Or(string(sec.Data[registration.ClusterNameKey]), clusterName)
	if cluster == "" {
		return degraded(operatorv1.ReasonClusterNameMissing, fmt.Sprintf("Hub kubeconfig secret %s/%s names no cluster", ns, name))
	}
	cfg, err := registration.RESTConfigFromKubeconfig(kubeconfig, fmt.Sprintf("secret %s/%s", ns, name))
	if err != nil {
		return degraded(operatorv1.ReasonHubKubeConfigError, err.Error())
	}
	cfg.Dial, cfg.Timeout, cfg.QPS, cfg.Burst = dial, 10*time.Second, 2, 5
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return degraded(operatorv1.ReasonHubKubeConfigError, err.Error())
	}
	attrs := &authorizationv1.ResourceAttributes{Group: "cluster.open-cluster-management.io", Resource: "managedclusters",
		Subresource: "status", Verb: "update", Name: cluster}
	review, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return degraded(operatorv1.ReasonHubKubeConfigError, fmt.Sprintf("Failed to create a SelfSubjectAccessReview with hub kubeconfig secret %s/%s to apiserver %s: %v",
			ns, name, cfg.Host, err))
	case !review.Status.Allowed:
		return degraded(operatorv1.ReasonHubKubeConfigUnauthorized, fmt.Sprintf("Operation %s %s/%s %s is not allowed with hub kubeconfig secret %s/%s to apiserver %s: "+
			"the hub has not accepted the cluster", attrs.Verb, attrs.Resource, attrs.Subresource, cluster, ns, name, cfg.Host))
	}
	return metav1.Condition{Type: operatorv1.ConditionHubConnectionDegraded, Status: metav1.ConditionFalse, Reason: operatorv1.ReasonHubConnectionFunctional,
		Message: fmt.Sprintf("Hub kubeconfig secret %s/%s to apiserver %s is working", ns, name, cfg.Host)}
}

// bootstrap describes the bootstrap kubeconfig while the agent has no hub identity; "" once
// it has one (it needs the bootstrap kubeconfig no more).
func (s *statusWriter) bootstrap(ctx context.Context, a *klusterlet.Agent) (reason, msg string) {
	st := a.Registration.State()
	if st.Phase == registration.PhaseConnected {
		return "", ""
	}
	r := s.opts.Registration
	source := "the configured bootstrap kubeconfig"
	if len(r.BootstrapKubeconfig) == 0 && s.opts.BootstrapKubeconfigFile == "" {
		ns, name := s.running.namespace, cmp.Or(r.BootstrapKubeconfigSecret, registration.DefaultBootstrapKubeconfigSecret)
		source = fmt.Sprintf("bootstrap secret %s/%s", ns, name)
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err != nil {
			return operatorv1.ReasonBootstrapSecretMissing, fmt.Sprintf("Failed to get bootstrap secret %s/%s: %v", ns, name, err)
		}
	}
	if st.Phase == registration.PhaseBootstrapping && st.LastError != "" {
		return operatorv1.ReasonBootstrapSecretError, fmt.Sprintf("Registering with %s failed: %s", source, st.LastError)
	}
	return operatorv1.ReasonBootstrapSecretFunctional, fmt.Sprintf("The agent registered with %s (phase %s)", source, st.Phase)
}

// relatedResources lists what the klusterlet manages on the managed cluster: its namespace,
// the hub kubeconfig Secret and the bootstrap one it reads, the add-on namespace it creates,
// its Lease, its Deployment and the CRDs of a managed cluster.
func (s *statusWriter) relatedResources() []operatorv1.RelatedResourceMeta {
	r := s.opts.Registration
	ns := s.running.namespace
	out := []operatorv1.RelatedResourceMeta{
		{Version: "v1", Resource: "namespaces", Name: ns},
		{Version: "v1", Resource: "secrets", Namespace: ns, Name: cmp.Or(r.HubKubeconfigSecret, registration.DefaultHubKubeconfigSecret)},
	}
	if len(r.BootstrapKubeconfig) == 0 && s.opts.BootstrapKubeconfigFile == "" {
		out = append(out, operatorv1.RelatedResourceMeta{Version: "v1", Resource: "secrets", Namespace: ns,
			Name: cmp.Or(r.BootstrapKubeconfigSecret, registration.DefaultBootstrapKubeconfigSecret)})
	}
	if !s.opts.Work.Disabled {
		out = append(out, operatorv1.RelatedResourceMeta{Version: "v1", Resource: "namespaces", Name: addonNamespace})
	}
	if le := s.opts.LeaderElection; le.Enabled {
		out = append(out, operatorrun.RelatedLease(cmp.Or(le.Namespace, ns), cmp.Or(le.Name, klusterlet.DefaultLeaderElectionName)))
	}
	if d := s.watch.Deployment(); d.Name != "" {
		out = append(out, operatorrun.RelatedDeployment(d))
	}
	for _, name := range managedClusterCRDs {
		out = append(out, operatorrun.RelatedCRD(name))
	}
	return out
}

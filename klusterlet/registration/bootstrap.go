package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// csrWatchTimeoutSeconds bounds one watch on a pending CSR; the agent then
// re-reads it, so a missed event costs at most this long.
const csrWatchTimeoutSeconds = 300

// bootstrapKubeconfig returns the configured bootstrap kubeconfig or the one in
// the bootstrap secret, with a description of where it came from for errors.
func (a *Agent) bootstrapKubeconfig(ctx context.Context) ([]byte, string, error) {
	if len(a.cfg.BootstrapKubeconfig) > 0 {
		return a.cfg.BootstrapKubeconfig, "bootstrap kubeconfig (configured)", nil
	}
	ns, name := a.cfg.AgentNamespace, a.cfg.BootstrapKubeconfigSecret
	source := fmt.Sprintf("secret %s/%s key %s", ns, name, KubeconfigKey)
	s, err := a.management.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, source, fmt.Errorf("reading bootstrap kubeconfig %s: %w", source, err)
	}
	data := s.Data[KubeconfigKey]
	if len(data) == 0 {
		return nil, source, fmt.Errorf("bootstrap kubeconfig %s is empty", source)
	}
	return data, source, nil
}

// bootstrap uses the bootstrap identity to make sure the ManagedCluster exists
// and to get a client certificate signed, then stores the hub kubeconfig.
func (a *Agent) bootstrap(ctx context.Context, id Identity, sec *HubSecret) (*HubConnection, error) {
	a.setPhase(PhaseBootstrapping)
	data, source, err := a.bootstrapKubeconfig(ctx)
	if err != nil {
		return nil, err
	}
	ep, err := EndpointFromKubeconfig(data, source)
	if err != nil {
		return nil, err
	}
	restCfg, err := RESTConfigFromKubeconfig(data, source)
	if err != nil {
		return nil, err
	}
	a.update(func(s *State) { s.KubeconfigLoaded = true })
	restCfg.UserAgent = userAgent
	if a.cfg.HubDial != nil {
		restCfg.Dial = a.cfg.HubDial
	}
	hubKube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("hub client from %s: %w", source, err)
	}
	hubClient, err := client.New(restCfg, client.Options{Scheme: a.scheme, Mapper: a.cfg.HubMapper})
	if err != nil {
		return nil, fmt.Errorf("hub client from %s: %w", source, err)
	}
	if err := a.ensureManagedCluster(ctx, hubClient, id); err != nil {
		return nil, err
	}
	a.setPhase(PhaseWaitingForCertificate)
	creds, err := a.requestCertificate(ctx, hubKube, sec, id)
	if err != nil {
		return nil, err
	}
	if err := a.storeCredentials(ctx, sec, ep, creds); err != nil {
		return nil, err
	}
	conn, err := newHubConnection(ep, creds, a.cfg.HubDial)
	if err != nil {
		return nil, err
	}
	a.log.Info("Hub client certificate issued", "cluster", id.ClusterName, "agent", id.AgentName,
		"secret", sec.ref(), "notAfter", creds.Leaf.NotAfter)
	a.update(func(s *State) { s.Phase, s.CertificateNotAfter = PhaseConnected, creds.Leaf.NotAfter })
	return conn, nil
}

// storeCredentials writes the kubeconfig, certificate and key into the secret and
// drops the pending key they came from.
func (a *Agent) storeCredentials(ctx context.Context, sec *HubSecret, ep HubEndpoint, creds *Credentials) error {
	kubeconfig, err := BuildHubKubeconfig(ep, creds)
	if err != nil {
		return err
	}
	sec.Kubeconfig, sec.CertPEM, sec.KeyPEM, sec.PendingKey = kubeconfig, creds.CertPEM, creds.KeyPEM, nil
	return sec.Write(ctx, a.management.CoreV1())
}

// desiredClientConfigs is how the hub can reach this managed cluster.
func (a *Agent) desiredClientConfigs() []clusterv1.ClientConfig {
	if ext := a.cfg.externalClientConfigs(a.managedCA); ext != nil {
		return ext
	}
	if a.managedURL == "" {
		return nil
	}
	return []clusterv1.ClientConfig{{URL: a.managedURL, CABundle: a.managedCA}}
}

// ensureManagedCluster creates the cluster's ManagedCluster, not yet accepted,
// and keeps its client configs current.
func (a *Agent) ensureManagedCluster(ctx context.Context, hub client.Client, id Identity) error {
	mc := &clusterv1.ManagedCluster{}
	err := hub.Get(ctx, client.ObjectKey{Name: id.ClusterName}, mc)
	switch {
	case err == nil:
		want := a.desiredClientConfigs()
		if want == nil || slices.EqualFunc(mc.Spec.ManagedClusterClientConfigs, want, clientConfigEqual) {
			return nil
		}
		mc.Spec.ManagedClusterClientConfigs = want
		if err := hub.Update(ctx, mc); err != nil {
			// Not fatal: the hub still knows the cluster; the agent retries on the next bootstrap.
			a.log.Info("Could not update managedClusterClientConfigs", "managedCluster", id.ClusterName, "error", err.Error())
		}
		return nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		// A bootstrap identity without "get" may still create.
	default:
		return fmt.Errorf("reading ManagedCluster %s on the hub: %w", id.ClusterName, err)
	}
	annotations, dropped := a.cfg.clusterAnnotations()
	if len(dropped) > 0 {
		a.log.Info("Cluster annotations without the agent.open-cluster-management.io/ prefix are not set", "managedCluster", id.ClusterName, "keys", dropped)
	}
	mc = &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: id.ClusterName, Annotations: annotations, Labels: a.cfg.clusterLabels()},
		Spec: clusterv1.ManagedClusterSpec{
			HubAcceptsClient:            false,
			ManagedClusterClientConfigs: a.desiredClientConfigs(),
			LeaseDurationSeconds:        a.cfg.LeaseDurationSeconds,
		},
	}
	if err := hub.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ManagedCluster %s on the hub: %w", id.ClusterName, err)
	}
	a.log.Info("ManagedCluster present on the hub", "managedCluster", id.ClusterName)
	return nil
}

func clientConfigEqual(x, y clusterv1.ClientConfig) bool {
	return x.URL == y.URL && string(x.CABundle) == string(y.CABundle)
}

// requestCertificate gets a certificate for id signed through hub, reusing the
// pending key stored in sec so that an earlier request is found again. A
// rejected request drops its key; the next attempt starts a new request.
func (a *Agent) requestCertificate(ctx context.Context, hub kubernetes.Interface, sec *HubSecret, id Identity) (*Credentials, error) {
	if len(sec.PendingKey) > 0 {
		if _, err := NewCertificateRequest(id, sec.PendingKey); err != nil {
			a.log.Info("Discarding unusable pending key", "secret", sec.ref(), "error", err.Error())
			sec.PendingKey = nil
		}
	}
	if len(sec.PendingKey) == 0 {
		key, err := NewPrivateKey()
		if err != nil {
			return nil, err
		}
		// Persist the key before the CSR exists, so that no signed certificate
		// can ever be issued for a key the agent lost.
		sec.PendingKey = key
		if err := sec.Write(ctx, a.management.CoreV1()); err != nil {
			return nil, err
		}
	}
	req, err := NewCertificateRequest(id, sec.PendingKey)
	if err != nil {
		return nil, err
	}
	a.update(func(s *State) { s.CSRName = req.Name })
	creds, err := a.waitForCertificate(ctx, hub, req, id)
	if errors.Is(err, errCSRRejected) {
		sec.PendingKey = nil
		if werr := sec.Write(ctx, a.management.CoreV1()); werr != nil {
			return nil, errors.Join(err, werr)
		}
	}
	return creds, err
}

// waitForCertificate creates the CSR if it does not exist and waits until it is
// signed or rejected. Hub errors are retried with backoff; it returns early only
// when ctx ends or the request is rejected.
func (a *Agent) waitForCertificate(ctx context.Context, hub kubernetes.Interface, req *CertificateRequest, id Identity) (*Credentials, error) {
	w := CSRWaiter{
		CSRs: hub.CertificatesV1().CertificateSigningRequests(), Backoff: a.backoff(), Clock: a.cfg.Clock,
		Log: a.log.WithValues("cluster", id.ClusterName, "subject", req.Subject), OnError: a.recordError,
	}
	certPEM, err := w.Wait(ctx, req.Object(id, a.cfg.CSRExpirationSeconds))
	if err != nil {
		return nil, err
	}
	creds, err := IssuedCredentials(id, req.Name, certPEM, req.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCSRRejected, err)
	}
	return creds, nil
}
